package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/store"
)

// Answer tokens are the two-way channels' form of an approval link: a chat
// button, an ntfy action or an email reply carries one, and the daemon
// reads the answer back over a connection it opened itself. A token is
// short (Telegram's callback data holds 64 bytes), so its claims stay in
// the store and the token is a random nonce and a MAC over the nonce and
// those claims: without the console's key nobody can make one, a token
// works for one channel, once (its nonce is marked in the links' used set,
// so it also excludes the links sent with it), until it expires, and only
// while the approval's arguments are the ones it was made for.

// answerNS is the state namespace holding answer tokens' claims by nonce.
const answerNS = "channel_answer_tokens"

// TypeAnswerRefused is the audit record of an answer a channel brought
// that was refused (unknown identity, invalid, used or expired token,
// changed arguments).
const TypeAnswerRefused = "answer_refused"

// Token sizes: a 12-byte nonce and a 12-byte tag, each 16 base64 chars.
const (
	answerNonceLen = 12
	answerTagLen   = 12
	// AnswerTokenLen is the length of an answer token's text.
	AnswerTokenLen = 32
)

// AnswerClaims is what the store keeps for an answer token.
type AnswerClaims struct {
	Approval string `json:"a"`
	ArgsHash string `json:"h"`
	Expires  int64  `json:"e"`
	Channel  string `json:"c"`
}

// ChannelAnswer is an answer a two-way channel read: the token it came
// with, the decision, the channel's name and who answered (as the channel
// identifies them, e.g. "telegram:12345 @ann").
type ChannelAnswer struct {
	Token    string
	Decision string
	Channel  string
	Who      string
	Reason   string
}

// AnswerToken makes a single-use answer token for apr, for the channel
// named channel. It expires after Options.LinkTTL or at the approval's
// deadline, whichever comes first.
func (c *Console) AnswerToken(ctx context.Context, apr *store.Approval, channel string) (string, time.Time, error) {
	if apr == nil || apr.ID == "" || channel == "" {
		return "", time.Time{}, errors.New("web: answer token: no approval or channel")
	}
	var raw [answerNonceLen]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", time.Time{}, err
	}
	nonce := base64.RawURLEncoding.EncodeToString(raw[:])
	exp := c.clk.Now().Add(c.opts.LinkTTL)
	if !apr.Deadline.IsZero() && apr.Deadline.Before(exp) {
		exp = apr.Deadline
	}
	cl := AnswerClaims{Approval: apr.ID, ArgsHash: apr.ArgsHash, Expires: exp.Unix(), Channel: channel}
	b, err := json.Marshal(cl)
	if err != nil {
		return "", time.Time{}, err
	}
	if err := c.k.Store.UpdateState(ctx, answerNS, nonce, func(old []byte) ([]byte, error) {
		if old != nil {
			return nil, errors.New("web: answer token: nonce collision")
		}
		return b, nil
	}); err != nil {
		return "", time.Time{}, fmt.Errorf("web: answer token: %w", err)
	}
	return nonce + base64.RawURLEncoding.EncodeToString(c.answerTag(nonce, cl)), time.Unix(cl.Expires, 0).UTC(), nil
}

func (c *Console) answerTag(nonce string, cl AnswerClaims) []byte {
	return mac(c.key, "answer", nonce, cl.Approval, cl.ArgsHash, strconv.FormatInt(cl.Expires, 10), cl.Channel)[:answerTagLen]
}

// WellFormedAnswerToken reports whether s has an answer token's shape (it
// says nothing of its validity).
func WellFormedAnswerToken(s string) bool {
	if len(s) != AnswerTokenLen {
		return false
	}
	_, err := strictB64.DecodeString(s)
	return err == nil
}

// checkAnswer verifies an answer's token and returns its claims and the
// approval as stored. Every failure is an error: nothing is answered.
func (c *Console) checkAnswer(ctx context.Context, a ChannelAnswer) (AnswerClaims, *store.Approval, error) {
	var cl AnswerClaims
	if a.Decision != gate.DecisionApprove && a.Decision != gate.DecisionDeny {
		return cl, nil, ErrLinkInvalid
	}
	if !WellFormedAnswerToken(a.Token) {
		return cl, nil, ErrLinkInvalid
	}
	nonce, tag := a.Token[:AnswerTokenLen/2], a.Token[AnswerTokenLen/2:]
	b, err := c.k.Store.GetState(ctx, answerNS, nonce)
	if errors.Is(err, store.ErrNotFound) {
		return cl, nil, ErrLinkInvalid
	}
	if err != nil {
		return cl, nil, err
	}
	if err := json.Unmarshal(b, &cl); err != nil {
		return AnswerClaims{}, nil, ErrLinkInvalid
	}
	got, err := strictB64.DecodeString(tag)
	if err != nil || !hmac.Equal(got, c.answerTag(nonce, cl)) {
		return cl, nil, ErrLinkInvalid
	}
	if cl.Channel != a.Channel {
		return cl, nil, ErrLinkMismatch // a token sent to one channel is not answered through another
	}
	if !c.clk.Now().Before(time.Unix(cl.Expires, 0)) {
		return cl, nil, ErrLinkExpired
	}
	apr, err := c.boundApproval(ctx, cl.Approval, cl.ArgsHash, nonce)
	return cl, apr, err
}

// AnswerFromChannel verifies a channel's answer and gives it to the gate
// like any other answer (the first terminal answer wins): the channel and
// who answered are recorded with it. A refused answer returns an error
// and is audited; an answer to a request already answered returns the
// approval with applied false. The caller has checked who answered
// against the channel's allow-list (see RefuseAnswer for those it refused).
func (c *Console) AnswerFromChannel(ctx context.Context, a ChannelAnswer) (*store.Approval, bool, error) {
	cl, apr, err := c.checkAnswer(ctx, a)
	if err != nil {
		c.RefuseAnswer(ctx, a, err)
		return apr, false, err
	}
	// A token answers once; after the request was decided elsewhere its
	// answer is still recorded (as late, changing nothing) by the gate.
	nonce := a.Token[:AnswerTokenLen/2]
	if err := c.useLink(ctx, LinkClaims{Approval: cl.Approval, Decision: a.Decision, Expires: cl.Expires, Nonce: nonce}); err != nil {
		c.RefuseAnswer(ctx, a, err)
		return apr, false, err
	}
	reason := strings.TrimSpace(a.Reason)
	if len(reason) > 2000 {
		reason = reason[:2000]
	}
	return c.k.Answer(ctx, cl.Approval, store.Answer{Decision: a.Decision, Who: a.Who, Channel: a.Channel, Reason: reason})
}

// RefuseAnswer writes the audit record of a refused channel answer; the
// approval is named when the token is genuine.
func (c *Console) RefuseAnswer(ctx context.Context, a ChannelAnswer, why error) {
	approval := ""
	if WellFormedAnswerToken(a.Token) {
		nonce := a.Token[:AnswerTokenLen/2]
		var cl AnswerClaims
		if b, err := c.k.Store.GetState(ctx, answerNS, nonce); err == nil && json.Unmarshal(b, &cl) == nil {
			if got, err := strictB64.DecodeString(a.Token[AnswerTokenLen/2:]); err == nil && hmac.Equal(got, c.answerTag(nonce, cl)) {
				approval = cl.Approval
			}
		}
	}
	e := audit.Entry{Type: TypeAnswerRefused, Data: map[string]any{
		"approval": approval, "channel": a.Channel, "who": a.Who, "decision": a.Decision, "why": refusalReason(why),
	}}
	if approval != "" {
		if apr, err := c.k.Gate.Get(ctx, approval); err == nil {
			e.ActionID, e.Agent, e.Session, e.Tool = apr.ActionID, apr.Agent, apr.Session, apr.Tool
		}
	}
	_, _ = c.k.Audit.Append(ctx, e) // best effort: the answer is refused whether or not this is recorded
}

// refusalReason names a refusal for the audit record.
func refusalReason(err error) string {
	switch {
	case errors.Is(err, ErrLinkExpired):
		return "expired"
	case errors.Is(err, ErrLinkUsed):
		return "used"
	case errors.Is(err, ErrLinkMismatch):
		return "mismatch"
	case errors.Is(err, ErrLinkInvalid):
		return "invalid"
	case errors.Is(err, store.ErrNotFound):
		return "no such approval"
	}
	return err.Error()
}
