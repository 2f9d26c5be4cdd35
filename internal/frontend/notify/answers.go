package notify

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
)

// Two-way channels carry the answer back over a connection the daemon
// opens itself (long polling, a subscription, a mailbox), so nothing has
// to listen beyond loopback. The rules are the same for every channel:
//
//   - only the identities on the channel's allow-list may answer;
//   - every answer carries the single-use answer token sent with the
//     request, bound to the approval, its arguments' hash and the channel
//     (the Answerer verifies it), so a stranger who learns a chat, topic or
//     address cannot answer, and a replay or an answer to a changed action
//     is refused;
//   - answers go through the HumanGate (the first answer wins), recorded
//     with the channel's name and the identity; refusals are audited;
//   - a channel that loses its connection reconnects with backoff and
//     reports it (Options.Status).

// Reply is an answer a two-way channel read.
type Reply struct {
	Token    string // the answer token it came with
	Decision string // approve or deny
	Identity string // who, as the channel knows them ("telegram:42 @ann")
	Reason   string
	// Channel is the channel's name (set by the notifier).
	Channel string
}

// Answerer verifies replies and gives them to the gate: the web console's
// answer tokens, in the daemon.
type Answerer interface {
	// AnswerToken makes a single-use token for apr sent through channel.
	AnswerToken(ctx context.Context, apr *store.Approval, channel string) (string, time.Time, error)
	// Answer verifies r's token and answers. A refused reply is an error
	// (and audited); applied is false when the request was answered already.
	Answer(ctx context.Context, r Reply) (apr *store.Approval, applied bool, err error)
	// Refuse audits a reply refused before its token was looked at.
	Refuse(ctx context.Context, r Reply, why error)
}

// ErrNotAllowed means who answered is not on the channel's allow-list.
var ErrNotAllowed = errors.New("notify: this identity may not answer through this channel")

// Outcome is what became of a reply.
type Outcome struct {
	Approval *store.Approval // as stored after the answer (nil if unknown)
	Applied  bool            // this reply decided the request
	Err      error           // the reply was refused
}

// Handler is what a listening channel hands its replies and its
// connection's state to.
type Handler interface {
	// Answer checks the identity and the token and answers.
	Answer(ctx context.Context, r Reply) Outcome
	// Allowed reports whether identity is on the channel's allow-list.
	Allowed(identity string) bool
	// Status reports the connection: nil when connected, the error when lost.
	Status(err error)
}

// Listener is a channel that reads answers back. Listen runs until ctx
// ends, reconnecting with backoff.
type Listener interface {
	Listen(ctx context.Context, h Handler) error
}

// Settler is a channel that changes what it sent once the request is
// decided (answered here or elsewhere, expired, withdrawn).
type Settler interface {
	Settle(ctx context.Context, apr *store.Approval)
}

// identityCheck says whether an identity a channel read may answer.
type identityCheck func(identity string) bool

// allowedOf is the allow-list check of a channel's configuration (nil for
// one-way channels: nobody answers through them).
func allowedOf(cc ChannelConfig) identityCheck {
	switch {
	case cc.Type == TypeTelegram:
		return allowList("telegram:", cc.Allow)
	case cc.Type == TypeSlackApp:
		return allowList("slack:", cc.Allow)
	case cc.Type == TypeEmail && cc.IMAP != "":
		var addrs []string
		for _, a := range cc.Allow {
			if p, err := mail.ParseAddress(a); err == nil {
				addrs = append(addrs, p.Address)
			}
		}
		return allowList("email:", addrs)
	case cc.Type == TypeNtfy && cc.ReplyTopic != "":
		// ntfy says nothing of who published: whoever may write the
		// reply topic is the identity (see docs/web.md).
		return allowList("", []string{"ntfy:" + cc.ReplyTopic})
	}
	return nil
}

// allowList returns the check of a channel's allow list: an identity is
// allowed when its first field (before a space) is listed, compared
// case-insensitively. An empty list allows nobody.
func allowList(prefix string, allow []string) identityCheck {
	set := map[string]bool{}
	for _, a := range allow {
		set[strings.ToLower(prefix+strings.TrimSpace(a))] = true
	}
	return func(id string) bool {
		first, _, _ := strings.Cut(id, " ")
		return first != "" && set[strings.ToLower(first)]
	}
}

// channelHandler is the Handler of one channel.
type channelHandler struct {
	n       *Notifier
	name    string
	allowed identityCheck

	mu    sync.Mutex
	down  error
	since time.Time // of the current state
	known bool      // a state was reported
}

func (h *channelHandler) Answer(ctx context.Context, r Reply) Outcome {
	r.Channel = h.name
	a := h.n.opts.Answerer
	if a == nil {
		return Outcome{Err: errors.New("notify: answers are not taken here")}
	}
	if h.allowed == nil || !h.allowed(r.Identity) {
		a.Refuse(ctx, r, ErrNotAllowed)
		h.n.opts.Logf("notify: %s: refused an answer from %s: not on the allow-list", h.name, r.Identity)
		return Outcome{Err: ErrNotAllowed}
	}
	apr, applied, err := a.Answer(ctx, r)
	switch {
	case err != nil && applied:
		// The gate took the answer; what failed came after (learning from it).
		h.n.opts.Logf("notify: %s: answered by %s, but: %v", h.name, r.Identity, err)
		err = nil
	case err != nil:
		h.n.opts.Logf("notify: %s: refused an answer from %s: %v", h.name, r.Identity, err)
	}
	return Outcome{Approval: apr, Applied: applied, Err: err}
}

func (h *channelHandler) Allowed(identity string) bool {
	return h.allowed != nil && h.allowed(identity)
}

func (h *channelHandler) Status(err error) {
	h.mu.Lock()
	was, known := h.down, h.known
	if !known || (was == nil) != (err == nil) {
		h.since = h.n.opts.Clock.Now()
	}
	h.down, h.known = err, true
	h.mu.Unlock()
	switch {
	case err != nil && was == nil:
		h.n.opts.Logf("notify: %s: connection lost, reconnecting: %v", h.name, err)
	case err == nil && was != nil:
		h.n.opts.Logf("notify: %s: connected again", h.name)
	}
	if h.n.opts.Status != nil {
		h.n.opts.Status(h.name, err)
	}
}

// Listen runs the listening channels until ctx ends (each on a goroutine
// it owns) and returns when they all have. Without an Answerer it returns
// at once.
func (n *Notifier) Listen(ctx context.Context) {
	if n.opts.Answerer == nil {
		return
	}
	var wg sync.WaitGroup
	for _, nc := range n.chans {
		l, ok := nc.ch.(Listener)
		if !ok || !n.twoWay(nc) {
			continue
		}
		h := n.handler(nc)
		wg.Add(1)
		go func() { // owned by Listen, which waits for it
			defer wg.Done()
			if err := l.Listen(ctx, h); err != nil && ctx.Err() == nil {
				n.opts.Logf("notify: %s: stopped listening: %v", nc.name, err)
			}
		}()
	}
	wg.Wait()
}

// handler returns the channel's handler (one per channel, kept for Health).
func (n *Notifier) handler(nc namedChannel) *channelHandler {
	n.hmu.Lock()
	defer n.hmu.Unlock()
	if n.handlers == nil {
		n.handlers = map[string]*channelHandler{}
	}
	h := n.handlers[nc.name]
	if h == nil {
		h = &channelHandler{n: n, name: nc.name, allowed: nc.allowed}
		n.handlers[nc.name] = h
	}
	return h
}

// ChannelHealth is the connection state of a two-way channel.
type ChannelHealth struct {
	ChannelInfo
	// State is "connected", "reconnecting" (Error says why) or "starting".
	State string    `json:"state"`
	Error string    `json:"error,omitempty"`
	Since time.Time `json:"since,omitzero"`
}

// Health reports the channels and, for the two-way ones, their connections.
func (n *Notifier) Health() []ChannelHealth {
	var out []ChannelHealth
	for _, c := range n.Channels() {
		ch := ChannelHealth{ChannelInfo: c}
		if c.TwoWay && n.standby.Load() {
			ch.State = "standby" // another instance sharing the database listens
		} else if c.TwoWay {
			ch.State = "starting"
			n.hmu.Lock()
			h := n.handlers[c.Name]
			n.hmu.Unlock()
			if h != nil {
				h.mu.Lock()
				if h.known {
					ch.State, ch.Since = "connected", h.since
					if h.down != nil {
						ch.State, ch.Error = "reconnecting", h.down.Error()
					}
				}
				h.mu.Unlock()
			}
		}
		out = append(out, ch)
	}
	return out
}

// SetStandby says whether another process listens to the two-way channels
// (several instances on one database: one leads them), for Health.
func (n *Notifier) SetStandby(standby bool) { n.standby.Store(standby) }

// twoWay reports whether a channel takes answers.
func (n *Notifier) twoWay(nc namedChannel) bool {
	_, ok := nc.ch.(Listener)
	if !ok {
		return false
	}
	if tw, ok := nc.ch.(interface{ TwoWay() bool }); ok {
		return tw.TwoWay()
	}
	return true
}

// settle tells the settling channels that apr is decided.
func (n *Notifier) settle(ctx context.Context, apr *store.Approval) {
	if apr == nil || apr.Status == store.StatusPending {
		return
	}
	for _, nc := range n.chans {
		if s, ok := nc.ch.(Settler); ok {
			s.Settle(ctx, apr)
		}
	}
}

// Backoff defaults of reconnecting channels.
const (
	DefaultReconnectMin = time.Second
	DefaultReconnectMax = time.Minute
)

// backoff is a reconnecting loop's wait: it doubles from min to max and
// starts over after a success.
type backoff struct {
	clk      clock.Clock
	min, max time.Duration
	next     time.Duration
}

func (b *backoff) reset() { b.next = 0 }

// wait sleeps before the next attempt; false when ctx ended.
func (b *backoff) wait(ctx context.Context) bool {
	if b.next == 0 {
		b.next = b.min
	} else {
		b.next = min(2*b.next, b.max)
	}
	select {
	case <-ctx.Done():
		return false
	case <-b.clk.After(b.next):
		return true
	}
}

func newBackoff(opts Options) *backoff {
	lo, hi := opts.ReconnectMin, opts.ReconnectMax
	if lo <= 0 {
		lo = DefaultReconnectMin
	}
	if hi < lo {
		hi = max(DefaultReconnectMax, lo)
	}
	return &backoff{clk: opts.Clock, min: lo, max: hi}
}

// maxReplyText bounds the text a reply is read from.
const maxReplyText = 64 << 10

// ParseReply reads a written answer ("approve", "deny too risky", "no:
// use git clean") from the text a person wrote: the first line that is not
// empty, quoted ("> …") or the start of a quotation ("On … wrote:"), up
// to a signature ("-- "). Its first word decides; the rest of it, and the
// lines after it, are the reason. Anything else is not an answer (ok is
// false): a reply is never guessed to approve.
func ParseReply(text string) (decision, reason string, ok bool) {
	if len(text) > maxReplyText {
		text = text[:maxReplyText]
	}
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(l)
		if l == "-- " || t == "--" || t == "__" || strings.HasPrefix(t, "-----Original Message") {
			break // a signature or a quoted original below
		}
		if strings.HasPrefix(t, ">") {
			continue
		}
		if strings.HasPrefix(t, "On ") && strings.HasSuffix(t, "wrote:") {
			break
		}
		if t == "" && len(lines) == 0 {
			continue
		}
		lines = append(lines, t)
	}
	if len(lines) == 0 {
		return "", "", false
	}
	first := lines[0]
	word, rest := first, ""
	if i := strings.IndexFunc(first, func(r rune) bool {
		return unicode.IsSpace(r) || r == ':' || r == ',' || r == '.' || r == '!' || r == '-'
	}); i >= 0 {
		word, rest = first[:i], first[i:]
	}
	switch strings.ToLower(word) {
	case "approve", "approved", "yes", "y", "ok", "allow":
		decision = "approve"
	case "deny", "denied", "no", "n", "reject", "refuse":
		decision = "deny"
	default:
		return "", "", false
	}
	rest = strings.TrimLeft(rest, " \t:,.!-")
	more := strings.TrimSpace(strings.Join(lines[1:], "\n"))
	reason = strings.TrimSpace(strings.Join(nonEmpty(rest, more), "\n"))
	if len(reason) > 2000 {
		reason = reason[:2000]
	}
	return decision, reason, true
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// outcomeText says what became of a request, for the message a channel
// edits once it is decided.
func outcomeText(apr *store.Approval) string {
	if apr == nil {
		return "answered"
	}
	a := apr.Answer
	switch {
	case a == nil:
		return string(apr.Status)
	case apr.Status == store.StatusWithdrawn:
		return "withdrawn: nobody waits for the answer any more"
	case a.Channel == "timeout":
		return fmt.Sprintf("expired: nobody answered in time, the default applied (%s)", a.Decision)
	}
	s := fmt.Sprintf("%s by %s via %s", apr.Status, a.Who, a.Channel)
	if a.Reason != "" {
		s += ": " + a.Reason
	}
	return s
}
