package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// linkNS is the state namespace where used link nonces are marked.
const linkNS = "web_links_used"

// LinkChannel is the channel recorded for answers given through a link.
const LinkChannel = "link"

// maxTokenLen bounds a link token before it is parsed.
const maxTokenLen = 2048

// Sentinel errors of approval links.
var (
	// ErrLinkInvalid means the token is malformed or its signature is wrong.
	ErrLinkInvalid = errors.New("web: invalid approval link")
	// ErrLinkExpired means the link's time is over.
	ErrLinkExpired = errors.New("web: the approval link has expired")
	// ErrLinkUsed means the link (or its sibling from the same message)
	// was used already.
	ErrLinkUsed = errors.New("web: the approval link was used already")
	// ErrLinkMismatch means the link belongs to another approval, or the
	// approval's arguments are not the ones the link was made for.
	ErrLinkMismatch = errors.New("web: the approval link does not match the approval")
)

// strictB64 decodes link tokens.
var strictB64 = base64.RawURLEncoding.Strict()

// LinkClaims is what a signed approval link says.
type LinkClaims struct {
	Approval string `json:"a"`           // approval id
	ArgsHash string `json:"h"`           // the exact arguments it was made for
	Decision string `json:"d"`           // approve or deny
	Expires  int64  `json:"e"`           // unix seconds
	Nonce    string `json:"n"`           // shared by the links of one message: one use in all
	Who      string `json:"w,omitempty"` // who the message went to (recorded as who answered)
}

// Links are the URLs a notification carries for one approval.
type Links struct {
	Approve string `json:"approve"`
	Deny    string `json:"deny"`
	// Open is the approval in the console (needs a signed-in session).
	Open    string    `json:"open"`
	Expires time.Time `json:"expires"`
}

// Links makes the approve and deny links for apr, rooted at base (the
// console's address as the recipient reaches it, e.g. https://host:7777).
// Both links share one nonce: whichever is used first, the other stops
// working. They expire after Options.LinkTTL or at the approval's deadline,
// whichever comes first. who names the recipient (recorded as who answered).
func (c *Console) Links(apr *store.Approval, base, who string) (Links, error) {
	if apr == nil || apr.ID == "" {
		return Links{}, errors.New("web: links: no approval")
	}
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Links{}, fmt.Errorf("web: links: base URL %q must be http(s)://host[:port]", base)
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Links{}, err
	}
	exp := c.clk.Now().Add(c.opts.LinkTTL)
	if !apr.Deadline.IsZero() && apr.Deadline.Before(exp) {
		exp = apr.Deadline
	}
	cl := LinkClaims{Approval: apr.ID, ArgsHash: apr.ArgsHash, Expires: exp.Unix(),
		Nonce: base64.RawURLEncoding.EncodeToString(raw[:]), Who: who}
	root := strings.TrimRight(u.String(), "/")
	mk := func(decision string) (string, error) {
		cl.Decision = decision
		tok, err := c.signLink(cl)
		if err != nil {
			return "", err
		}
		return root + Prefix + "a/" + tok, nil
	}
	var l Links
	if l.Approve, err = mk(gate.DecisionApprove); err != nil {
		return Links{}, err
	}
	if l.Deny, err = mk(gate.DecisionDeny); err != nil {
		return Links{}, err
	}
	l.Open = root + Prefix + "#/queue/" + url.PathEscape(apr.ID)
	l.Expires = time.Unix(cl.Expires, 0).UTC()
	return l, nil
}

func (c *Console) signLink(cl LinkClaims) (string, error) {
	payload, err := json.Marshal(cl)
	if err != nil {
		return "", err
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(mac(c.key, "link", p)), nil
}

// ParseLink verifies a link token's signature and expiry and returns its
// claims. It does not check the approval or whether the link was used.
func (c *Console) ParseLink(tok string) (LinkClaims, error) {
	var cl LinkClaims
	if len(tok) == 0 || len(tok) > maxTokenLen {
		return cl, ErrLinkInvalid
	}
	p, sig, ok := strings.Cut(tok, ".")
	if !ok {
		return cl, ErrLinkInvalid
	}
	// Strict: a token has one spelling (no stray bits in the last character).
	got, err := strictB64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(c.key, "link", p)) {
		return cl, ErrLinkInvalid
	}
	payload, err := strictB64.DecodeString(p)
	if err != nil {
		return cl, ErrLinkInvalid
	}
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cl); err != nil {
		return LinkClaims{}, ErrLinkInvalid
	}
	if cl.Approval == "" || cl.Nonce == "" || (cl.Decision != gate.DecisionApprove && cl.Decision != gate.DecisionDeny) {
		return LinkClaims{}, ErrLinkInvalid
	}
	if !c.clk.Now().Before(time.Unix(cl.Expires, 0)) {
		return cl, ErrLinkExpired
	}
	return cl, nil
}

// checkLink verifies a token against its approval. It returns the claims
// and the approval as stored.
func (c *Console) checkLink(ctx context.Context, tok string) (LinkClaims, *store.Approval, error) {
	cl, err := c.ParseLink(tok)
	if err != nil {
		return cl, nil, err
	}
	apr, err := c.boundApproval(ctx, cl.Approval, cl.ArgsHash, cl.Nonce)
	return cl, apr, err
}

// boundApproval reads the approval a verified link or answer token names
// and checks it against the token: the same approval and arguments
// (ErrLinkMismatch) and a nonce not used yet (ErrLinkUsed; a read error
// counts as used). Past the read the approval is returned with the error,
// for the page that explains it.
func (c *Console) boundApproval(ctx context.Context, approval, argsHash, nonce string) (*store.Approval, error) {
	apr, err := c.k.Gate.Get(ctx, approval)
	if err != nil {
		return nil, err
	}
	if apr.ID != approval || apr.ArgsHash != argsHash {
		return apr, ErrLinkMismatch
	}
	used, err := c.linkUsed(ctx, nonce)
	if err != nil {
		return apr, err
	}
	if used {
		return apr, ErrLinkUsed
	}
	return apr, nil
}

// linkUsed reports whether a nonce was used. A read error counts as used.
func (c *Console) linkUsed(ctx context.Context, nonce string) (bool, error) {
	_, err := c.k.Store.GetState(ctx, linkNS, nonce)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	default:
		return true, err
	}
}

// useLink marks a nonce used; the first caller wins, in this process or any
// other sharing the database.
func (c *Console) useLink(ctx context.Context, cl LinkClaims) error {
	mark, err := json.Marshal(map[string]any{"approval": cl.Approval, "decision": cl.Decision, "at": c.clk.Now(),
		"expires": time.Unix(cl.Expires, 0).UTC()})
	if err != nil {
		return err
	}
	return c.k.Store.UpdateState(ctx, linkNS, cl.Nonce, func(old []byte) ([]byte, error) {
		if old != nil {
			return nil, ErrLinkUsed
		}
		return mark, nil
	})
}

// linkView is the data of the link page.
type linkView struct {
	Token    string
	Claims   LinkClaims
	Approval *store.Approval
	Proposed any
	Title    string
	Message  string
	Status   int
	Done     bool
	Applied  bool
}

func (c *Console) renderLink(w http.ResponseWriter, v linkView) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if v.Status == 0 {
		v.Status = http.StatusOK
	}
	w.WriteHeader(v.Status)
	_ = c.pages.link.render(w, linkVals(v, c.clk.Now()))
}

// renderLinkError shows the page of a link that answered nothing: what
// linkError says of err, and the approval when it was read.
func (c *Console) renderLinkError(w http.ResponseWriter, err error, apr *store.Approval) {
	st, title, msg := linkError(err)
	c.renderLink(w, linkView{Title: title, Message: msg, Status: st, Approval: apr})
}

// linkError maps a link error to what the person sees.
func linkError(err error) (int, string, string) {
	switch {
	case errors.Is(err, ErrLinkExpired):
		return http.StatusGone, "This link has expired", "Open the console to answer, if the request is still waiting."
	case errors.Is(err, ErrLinkUsed):
		return http.StatusGone, "This link was used already", "Each link works once. Open the console to see the answer."
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, "No such request", "The request this link was made for does not exist."
	case errors.Is(err, ErrLinkMismatch), errors.Is(err, ErrLinkInvalid):
		return http.StatusForbidden, "This link is not valid", "It may have been altered or made with another key."
	default:
		return http.StatusInternalServerError, "Something went wrong", "Nothing was answered. " + err.Error()
	}
}

// linkPage shows what a link would answer. A GET never answers: link
// scanners in mail and chat fetch URLs, and must not approve anything.
func (c *Console) linkPage(w http.ResponseWriter, r *http.Request) {
	tok := r.PathValue("token")
	cl, apr, err := c.checkLink(r.Context(), tok)
	if err != nil {
		c.renderLinkError(w, err, apr)
		return
	}
	v := linkView{Token: tok, Claims: cl, Approval: apr}
	if apr.Status != store.StatusPending {
		v.Done = true
		v.Title = "Already answered"
		v.Message = answeredText(apr)
	} else if cl.Decision == gate.DecisionApprove {
		v.Title = "Approve this action?"
	} else {
		v.Title = "Deny this action?"
	}
	c.renderLink(w, v)
}

// linkAnswer answers the approval the link is bound to, once.
func (c *Console) linkAnswer(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	tok := r.PathValue("token")
	cl, apr, err := c.checkLink(r.Context(), tok)
	if err != nil {
		c.renderLinkError(w, err, apr)
		return
	}
	if apr.Status != store.StatusPending {
		c.renderLink(w, linkView{Title: "Already answered", Message: answeredText(apr), Approval: apr, Done: true})
		return
	}
	// The form states the decision it was shown for; it must be the link's.
	if d := r.PostFormValue("decision"); d != cl.Decision {
		c.renderLink(w, linkView{Title: "This link is not valid", Status: http.StatusBadRequest,
			Message: "The answer does not match the link.", Approval: apr})
		return
	}
	if err := c.useLink(r.Context(), cl); err != nil {
		c.renderLinkError(w, err, apr)
		return
	}
	who := cl.Who
	if who == "" {
		who = "link"
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if len(reason) > 2000 {
		reason = reason[:2000]
	}
	got, applied, err := c.k.Answer(r.Context(), cl.Approval, store.Answer{Decision: cl.Decision, Who: who,
		Channel: LinkChannel, Reason: reason})
	if err != nil && got == nil {
		c.renderLinkError(w, err, apr)
		return
	}
	v := linkView{Approval: got, Done: true, Applied: applied}
	if applied {
		v.Title = "Answered: " + string(got.Status)
		v.Message = "Thank you. The agent has been told."
	} else {
		v.Title = "Already answered"
		v.Message = answeredText(got)
	}
	c.renderLink(w, v)
}

func answeredText(apr *store.Approval) string {
	switch {
	case apr.Answer == nil:
		return "Its status is " + string(apr.Status) + "."
	case apr.Status == store.StatusWithdrawn:
		return "It was withdrawn: nobody waits for the answer any more (" + apr.Answer.Reason + ")."
	case apr.Answer.Who == gate.TimeoutActor:
		return fmt.Sprintf("Nobody answered it in time; the default (%s) applied.", apr.Answer.Decision)
	}
	return fmt.Sprintf("It was %s by %s via %s.", apr.Status, apr.Answer.Who, apr.Answer.Channel)
}

// proposedRules returns the rules "remember" would save for apr.
func proposedRules(apr *store.Approval) map[string]any {
	return map[string]any{
		"approve": kernel.ProposeRule(apr, gate.DecisionApprove),
		"deny":    kernel.ProposeRule(apr, gate.DecisionDeny),
	}
}
