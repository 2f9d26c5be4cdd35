// Package notify tells people that a request waits for them: desktop
// notifications, a generic JSON webhook, Slack- and Discord-compatible
// webhooks, ntfy-style push topics and email over SMTP. Each message carries
// the request's summary and approve/deny links with a single-use token,
// made by a Linker (the web console's signed links).
//
// The configuration is a strictly decoded YAML file (notify.yaml in
// Overseer's home). A Notifier is fed by the gate's events in the daemon,
// and also re-reads the pending queue so that requests opened by other
// processes sharing the database are announced too.
//
// Notifications decide nothing. A message that cannot be delivered is
// logged and retried a few times; the request stays pending, and at its
// deadline the gate applies its default (deny unless configured otherwise).
package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/store"
)

// Defaults of Options.
const (
	DefaultRetries = 3
	DefaultBackoff = time.Second
	DefaultPoll    = 2 * time.Second
	DefaultTimeout = 10 * time.Second
	// QueueSize bounds the messages waiting to be sent.
	QueueSize = 256
)

// ErrUnavailable means a channel cannot deliver on this machine (no
// notify-send, say).
var ErrUnavailable = errors.New("notify: channel unavailable")

// Links are the URLs a message carries.
type Links struct {
	Approve string    `json:"approve,omitempty"`
	Deny    string    `json:"deny,omitempty"`
	Open    string    `json:"open,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
}

// Linker makes the approve/deny links of a message. via names the channel
// (it is recorded as who answered through the link).
type Linker interface {
	Links(ctx context.Context, apr *store.Approval, via string) (Links, error)
}

// Message is what every channel renders in its own format.
type Message struct {
	ApprovalID      string          `json:"approval_id"`
	ActionID        string          `json:"action_id"`
	Tool            string          `json:"tool"`
	Kind            string          `json:"kind"`
	Level           string          `json:"level"`
	Agent           string          `json:"agent,omitempty"`
	Session         string          `json:"session,omitempty"`
	Cwd             string          `json:"cwd,omitempty"` // where the action runs
	Title           string          `json:"title"`
	Summary         string          `json:"summary"`
	Detail          string          `json:"detail"`
	Intent          string          `json:"intent,omitempty"`
	Reasons         []string        `json:"reasons,omitempty"`
	Preview         *action.Preview `json:"preview,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	Deadline        time.Time       `json:"deadline"`
	DefaultDecision string          `json:"default_decision"`
	Links           Links           `json:"links"`
	// Head, when set, makes the message a published audit chain head (see
	// PublishHead), not a request.
	Head *audit.Head `json:"head,omitempty"`
	// Alert names an alarm (AlertMessage) instead of an approval: the
	// message then has a title and a summary only, and nothing to answer.
	Alert string `json:"alert,omitempty"`
	// Security marks an alert about what an agent met or did (AlertOf:
	// prompt injection, an MCP rug pull, a secret sent), not about
	// Overseer itself. Webhooks get it as the event "alert".
	Security bool `json:"security,omitempty"`
	// AnswerToken is the single-use token a two-way channel's answer
	// carries (see answers.go); never put in one-way payloads.
	AnswerToken string `json:"-"`
	// Reply, when set, tells how to answer by replying (a two-way email).
	Reply string `json:"-"`
}

// AlertMessage is the message of an alarm named name (the database's size,
// for one): a title and a text for the person, nothing to answer.
func AlertMessage(name, title, text string, at time.Time) *Message {
	return &Message{Alert: name, Title: title, Summary: text, CreatedAt: at}
}

// maxDetail caps the argument text a message shows.
const maxDetail = 500

// MessageOf builds the message for an approval (without links).
func MessageOf(apr *store.Approval) *Message {
	a := &apr.Action
	m := &Message{
		ApprovalID: apr.ID, ActionID: apr.ActionID, Tool: apr.Tool, Kind: string(apr.Kind),
		Level: apr.Level.String(), Agent: apr.Agent, Session: apr.Session, Cwd: clip(a.Cwd, maxDetail),
		Summary: apr.Verdict.Summary(), Intent: clip(a.Intent, maxDetail), Preview: apr.Verdict.Preview,
		CreatedAt: apr.CreatedAt, Deadline: apr.Deadline, DefaultDecision: apr.DefaultDecision,
	}
	verb := "approval"
	if apr.Level == action.Confirm {
		verb = "confirmation"
	}
	m.Title = fmt.Sprintf("Overseer: %s needs your %s", apr.Tool, verb)
	if v, ok := a.Subject(); ok {
		m.Detail = clip(v, maxDetail)
	} else if len(a.Args) > 0 {
		m.Detail = clip(a.ArgsLine(), maxDetail)
	}
	for _, r := range apr.Verdict.Reasons {
		if r.Level < action.Confirm {
			continue
		}
		m.Reasons = append(m.Reasons, fmt.Sprintf("%s (%s): %s", r.Level, r.Origin(), r.Message))
	}
	return m
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// Text renders the message as plain text (email, desktop, ntfy).
func (m *Message) Text() string {
	if m.Head != nil {
		return "Overseer's audit log had " + fmt.Sprint(m.Head.Seq) + " records at " + m.Head.Time.UTC().Format(time.RFC3339) +
			". Keep this message: 'overseer audit verify --anchor' checks the log against the heads published.\n\n" +
			m.Head.Line() + "\n"
	}
	var b strings.Builder
	if m.Alert != "" {
		b.WriteString(m.Summary + "\n")
		if m.Links.Open != "" {
			fmt.Fprintf(&b, "\nConsole: %s\n", m.Links.Open)
		}
		return b.String()
	}
	who := []string{}
	if m.Agent != "" {
		who = append(who, "agent "+m.Agent)
	}
	if m.Session != "" {
		who = append(who, "session "+m.Session)
	}
	fmt.Fprintf(&b, "%s wants to run (%s)", m.Tool, m.Level)
	if len(who) > 0 {
		fmt.Fprintf(&b, " — %s", strings.Join(who, ", "))
	}
	b.WriteString("\n\n")
	if m.Detail != "" {
		b.WriteString("  " + m.Detail + "\n")
		if m.Cwd != "" {
			b.WriteString("  in " + m.Cwd + "\n")
		}
		b.WriteString("\n")
	}
	if m.Intent != "" {
		b.WriteString("Intent: " + m.Intent + "\n")
	}
	b.WriteString("Why: " + m.Summary + "\n")
	for _, r := range m.Reasons {
		b.WriteString("  - " + r + "\n")
	}
	for _, l := range m.Preview.Lines(10, 1500) {
		b.WriteString(l + "\n")
	}
	if !m.Deadline.IsZero() {
		fmt.Fprintf(&b, "Times out at %s (then: %s).\n", m.Deadline.Format(time.RFC1123), m.DefaultDecision)
	}
	if m.Reply != "" {
		b.WriteString("\n" + m.Reply + "\n")
	}
	if m.Links.Approve != "" {
		fmt.Fprintf(&b, "\nApprove: %s\nDeny:    %s\n", m.Links.Approve, m.Links.Deny)
	}
	if m.Links.Open != "" {
		fmt.Fprintf(&b, "Console: %s\n", m.Links.Open)
	}
	if m.Links.Approve != "" {
		b.WriteString("\nEach link works once")
		if !m.Links.Expires.IsZero() {
			fmt.Fprintf(&b, " and expires at %s", m.Links.Expires.Format(time.RFC1123))
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// Channel delivers one message.
type Channel interface {
	Send(ctx context.Context, m *Message) error
}

// Options tune a Notifier.
type Options struct {
	// Linker makes the links; nil sends messages without links.
	Linker Linker
	Clock  clock.Clock
	// HTTP is the client of the web channels (default: a plain client).
	HTTP *http.Client
	// Retries is how many times a failed delivery is tried in all.
	Retries int
	// Backoff is the wait before the first retry; it doubles each time.
	Backoff time.Duration
	// Poll is how often Run re-reads the pending queue.
	Poll time.Duration
	// Logf reports deliveries that failed (default: dropped).
	Logf func(format string, args ...any)
	// LookPath finds the desktop notification command (default exec.LookPath).
	LookPath func(string) (string, error)

	// Answerer verifies and applies the answers two-way channels read;
	// without one they only send.
	Answerer Answerer
	// Status is told when a listening channel loses its connection (err)
	// and when it is connected again (nil).
	Status func(channel string, err error)
	// ReconnectMin and ReconnectMax bound a listening channel's backoff.
	ReconnectMin, ReconnectMax time.Duration
	// Lookup reads an approval, so that Run can settle the messages of
	// requests answered by another process (optional).
	Lookup func(ctx context.Context, id string) (*store.Approval, error)
	// LongPoll is how long a long-polling channel's request waits for
	// news (default 30s).
	LongPoll time.Duration
	// Claim, when set, is asked before a request is announced, and the
	// request is announced only when it answers true: the first caller for
	// an id, across the processes sharing the database (so that a request
	// is announced once, even when the announcing process changes).
	Claim func(ctx context.Context, approvalID string) (bool, error)
}

// Notifier sends messages to the configured channels.
type Notifier struct {
	cfg   *Config
	opts  Options
	chans []namedChannel

	hmu      sync.Mutex
	handlers map[string]*channelHandler // of the listening channels, by name
	standby  atomic.Bool                // another process listens (SetStandby)
}

type namedChannel struct {
	name    string
	typ     string
	ch      Channel
	retry   bool
	tmo     time.Duration
	allowed identityCheck // who may answer a two-way channel
}

// New builds a notifier for a validated configuration.
func New(cfg *Config, opts Options) (*Notifier, error) {
	if cfg == nil {
		return nil, ErrNoConfig
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	if opts.Retries <= 0 {
		opts.Retries = DefaultRetries
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.LongPoll <= 0 {
		opts.LongPoll = 30 * time.Second
	}
	n := &Notifier{cfg: cfg, opts: opts}
	for _, cc := range cfg.Channels {
		ch, err := newChannel(cc, opts)
		if err != nil {
			return nil, fmt.Errorf("notify: channel %s: %w", cc.Name, err)
		}
		tmo := time.Duration(cc.Timeout)
		if tmo <= 0 {
			tmo = DefaultTimeout
		}
		n.chans = append(n.chans, namedChannel{name: cc.Name, typ: cc.Type, ch: ch, retry: cc.Type != TypeDesktop, tmo: tmo,
			allowed: allowedOf(cc)})
	}
	return n, nil
}

// Config returns the notifier's configuration.
func (n *Notifier) Config() *Config { return n.cfg }

// Notify sends apr to every channel at once and waits for them. It returns
// the channels' errors, joined.
func (n *Notifier) Notify(ctx context.Context, apr *store.Approval) error {
	return n.deliverAll(ctx, func(nc namedChannel) *Message {
		m := MessageOf(apr)
		if n.opts.Linker != nil {
			l, err := n.opts.Linker.Links(ctx, apr, nc.name)
			if err != nil {
				n.opts.Logf("notify: %s: no links for %s: %v", nc.name, apr.ID, err)
			} else {
				m.Links = l
			}
		}
		if n.opts.Answerer != nil && n.twoWay(nc) {
			tok, _, err := n.opts.Answerer.AnswerToken(ctx, apr, nc.name)
			if err != nil {
				n.opts.Logf("notify: %s: no answer token for %s (sent without buttons): %v", nc.name, apr.ID, err)
			} else {
				m.AnswerToken = tok
			}
		}
		return m
	})
}

// PublishHead sends an audit chain head to every channel but the desktop
// (which keeps nothing), so that the log can later be checked against it
// from a place the agent cannot rewrite. It returns the channels' errors,
// joined; with no such channel it does nothing.
func (n *Notifier) PublishHead(ctx context.Context, h audit.Head) error {
	return n.deliverAll(ctx, func(nc namedChannel) *Message {
		if nc.typ == TypeDesktop {
			return nil
		}
		hh := h
		return &Message{Title: "Overseer audit log head", Summary: fmt.Sprintf("audit record %d", h.Seq),
			Detail: h.Line(), CreatedAt: h.Time, Head: &hh}
	})
}

// Alert sends an alarm's message to every channel at once (whatever levels
// they take) and waits for them. It returns the channels' errors, joined.
func (n *Notifier) Alert(ctx context.Context, m *Message) error {
	return n.deliverAll(ctx, func(namedChannel) *Message { return m })
}

// deliverAll delivers to every channel at once the message msgOf makes for
// it (none where it is nil; msgOf runs for one channel after the other)
// and waits for them. It returns the channels' errors, joined.
func (n *Notifier) deliverAll(ctx context.Context, msgOf func(nc namedChannel) *Message) error {
	var wg sync.WaitGroup
	errs := make([]error, len(n.chans))
	for i, nc := range n.chans {
		m := msgOf(nc)
		if m == nil {
			continue
		}
		wg.Add(1)
		go func() { // owned by deliverAll, which waits for it
			defer wg.Done()
			if err := n.deliver(ctx, nc, m); err != nil {
				errs[i] = fmt.Errorf("%s: %w", nc.name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// retryAfter is an error that asks for a wait before the next attempt.
type retryAfter struct {
	err  error
	wait time.Duration
}

func (r *retryAfter) Error() string { return r.err.Error() }
func (r *retryAfter) Unwrap() error { return r.err }

// permanent marks an error that retrying cannot fix.
type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// maxRetryWait caps a Retry-After.
const maxRetryWait = 30 * time.Second

func (n *Notifier) deliver(ctx context.Context, nc namedChannel, m *Message) error {
	attempts := 1
	if nc.retry {
		attempts = n.opts.Retries
	}
	wait := n.opts.Backoff
	var err error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			d := wait
			var ra *retryAfter
			if errors.As(err, &ra) && ra.wait > 0 {
				d = min(ra.wait, maxRetryWait)
			}
			select {
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			case <-n.opts.Clock.After(d):
			}
			wait *= 2
		}
		actx, cancel := context.WithTimeout(ctx, nc.tmo)
		err = nc.ch.Send(actx, m)
		cancel()
		if err == nil {
			return nil
		}
		var p *permanent
		if errors.As(err, &p) || errors.Is(err, ErrUnavailable) {
			break
		}
	}
	return err
}

// Run announces pending requests until ctx ends: each request named by a
// "requested" event on events, and each pending request found by re-reading
// the queue with pending every Options.Poll, is sent once. Deliveries run
// on one worker goroutine owned by Run, so a slow channel never holds up
// the gate's events; Run returns after the worker has stopped.
func (n *Notifier) Run(ctx context.Context, events <-chan gate.Event, pending func(context.Context) ([]*store.Approval, error)) error {
	queue := make(chan *store.Approval, QueueSize)
	settled := make(chan *store.Approval, QueueSize)
	unclaimed := make(chan string, QueueSize) // claims that failed: tried again
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the delivery worker; exits when ctx ends or the queue closes
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case apr, ok := <-queue:
				if !ok {
					return
				}
				if n.opts.Claim != nil {
					mine, err := n.opts.Claim(ctx, apr.ID)
					if err != nil {
						if ctx.Err() == nil {
							n.opts.Logf("notify: %s: claiming the announcement (tried again at the next poll): %v", apr.ID, err)
						}
						select {
						case unclaimed <- apr.ID:
						default:
						}
						continue
					}
					if !mine {
						continue // announced already
					}
				}
				if err := n.Notify(ctx, apr); err != nil && ctx.Err() == nil {
					n.opts.Logf("notify: %s: %v", apr.ID, err)
				}
			}
		}
	}()
	go func() { // the settling worker (edits sent messages); exits like the other
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case apr, ok := <-settled:
				if !ok {
					return
				}
				n.settle(ctx, apr)
			}
		}
	}()
	defer func() {
		close(queue)
		close(settled)
		wg.Wait()
	}()
	settle := func(apr *store.Approval) {
		if apr == nil || apr.Status == store.StatusPending {
			return
		}
		select {
		case settled <- apr:
		default:
			n.opts.Logf("notify: the settling queue is full; the messages of %s stay as sent", apr.ID)
		}
	}

	sent := map[string]bool{}
	enqueue := func(apr *store.Approval) {
		if apr == nil || sent[apr.ID] || apr.Status != store.StatusPending || !n.cfg.wantsLevel(apr.Level) || apr.Tool == TestTool {
			return
		}
		select {
		case queue <- apr:
			sent[apr.ID] = true
		default:
			n.opts.Logf("notify: the queue is full; %s will be tried at the next poll", apr.ID)
		}
	}
	poll := func() {
		if pending == nil {
			return
		}
		list, err := pending(ctx)
		if err != nil {
			if ctx.Err() == nil {
				n.opts.Logf("notify: reading the pending queue: %v", err)
			}
			return
		}
		still := make(map[string]bool, len(list))
		for _, apr := range list {
			still[apr.ID] = true
			enqueue(apr)
		}
		for id := range sent {
			if !still[id] {
				delete(sent, id)
				if n.opts.Lookup != nil {
					if apr, err := n.opts.Lookup(ctx, id); err == nil {
						settle(apr)
					}
				}
			}
		}
	}
	poll()
	tick := n.opts.Clock.After(n.opts.Poll)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-events:
			if !ok {
				events = nil // keep polling
				continue
			}
			switch e.Type {
			case gate.EventRequested:
				enqueue(e.Approval)
			case gate.EventAnswered, gate.EventExpired:
				settle(e.Approval)
			}
		case id := <-unclaimed:
			delete(sent, id)
		case <-tick:
			tick = n.opts.Clock.After(n.opts.Poll)
			poll()
		}
	}
}
