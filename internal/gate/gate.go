// Package gate is the HumanGate: the only channel between Overseer and the
// people who answer for it.
//
// The gate asks and listens; it never decides whether to ask. The firewall
// decides that an action needs a person and calls Request; front ends (CLI,
// TUI, web, webhooks, MCP elicitation) call Answer with what the person said;
// the caller that holds the agent waits on Wait.
//
// Pending requests live in the store, so they survive a restart and can be
// answered by another process sharing the database. The first terminal answer
// wins; later answers are recorded with Applied=false and change nothing. A
// request whose deadline passes gets the configured default answer ("deny"
// unless configured otherwise), applied through the same first-answer-wins
// path. Every answer records who gave it, when, and through which channel.
//
// A request may name its asker (store.Asker): the process that holds the
// agent's call. A request whose asker is gone — its process ended, its wait
// ran out, nobody polls for it any more — is withdrawn (WithdrawGone): it
// ends as "withdrawn", which is not a refusal and teaches nothing.
//
// The package also reads free-text answers for their intent (ParseIntent, in
// English and Chinese) and tracks the two-stage abort (Aborts).
package gate

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/proc"
	"github.com/overseer-dev/overseer/internal/store"
)

// Decisions a person (or the timeout) can give.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
	DecisionAbort   = "abort"
	// DecisionWithdraw is the gate's own: the answer of a withdrawal.
	DecisionWithdraw = "withdraw"
)

// Remember scopes an answer may carry.
const (
	RememberNone    = ""
	RememberOnce    = "once"
	RememberSession = "session"
	RememberRule    = "rule"
)

// TimeoutActor is the Who and Channel of an answer the gate applied itself
// because the deadline passed. Answer refuses it from callers, so a person
// cannot pose as the timeout.
const TimeoutActor = "timeout"

// WithdrawnActor is the Who and Channel of the answer that withdraws a
// request nobody needs any more (its asker gave up or is gone, its task
// was aborted): the action does not run, and the answer says nothing about
// the person's trust in it.
const WithdrawnActor = "withdrawn"

// Defaults for a zero Config.
const (
	DefaultTimeout     = 5 * time.Minute
	DefaultPoll        = 250 * time.Millisecond
	DefaultRetryWindow = 10 * time.Minute
	DefaultAskerGrace  = 15 * time.Second
)

// Sentinel errors callers branch on. Unknown approval IDs wrap store.ErrNotFound.
var (
	// ErrInvalidAnswer is returned for an answer that fails validation.
	ErrInvalidAnswer = errors.New("gate: invalid answer")
	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("gate: invalid config")
	// ErrConsumed means an approval already let its one call through.
	ErrConsumed = errors.New("gate: approval already consumed")
	// ErrNotApproved means an approval's answer does not let the action run.
	ErrNotApproved = errors.New("gate: approval does not allow the action")
	// ErrNotAsker means a withdrawal did not come with the asker's key.
	ErrNotAsker = errors.New("gate: only the asker may withdraw its request")
)

// Config configures a Gate. Zero fields take the defaults above.
type Config struct {
	// Timeout is how long a request waits for a person before the default
	// answer applies.
	Timeout time.Duration
	// Default is the decision applied at the deadline: "deny" (the default)
	// or "approve".
	Default string
	// Poll is how often Wait re-reads the store for answers written by
	// another process sharing the database.
	Poll time.Duration
	// RetryWindow is how long after its answer an approval can still be
	// found by FindApproved for the agent and session that retry the
	// identical call.
	RetryWindow time.Duration
	// AskerGrace is how long a request whose asker holds a long-poll
	// (Asker.Hold) may go without anyone waiting on it before it counts as
	// given up.
	AskerGrace time.Duration
	// Process tells whether an asker's process runs; nil means proc.Check.
	Process func(proc.Identity) proc.State
	// OnAnswer, if set, runs after every answer the gate records — a
	// person's, a late one (applied=false), or the default applied at the
	// deadline — with the approval as stored afterwards. The kernel uses it
	// to audit answers and feed perception. Its error is returned to the
	// caller that recorded the answer.
	OnAnswer func(ctx context.Context, ap *store.Approval, ans store.Answer, applied bool) error
	// Journal, if set, writes the gate's changes to the queue (new
	// requests, answers) instead of the store: the kernel's journal commits
	// each one with its audit record, in one transaction.
	Journal Journal
	// Shared says the store is shared with the gates of other daemons that
	// an asker may hold its long-poll on instead (a fleet behind a load
	// balancer): then no waiter in this gate does not mean nobody waits,
	// so WithdrawGone leaves requests whose asker holds a long-poll to the
	// asker's Until and the deadline.
	Shared bool
}

// Journal writes the gate's changes to the approvals queue. person is true
// for an answer a person gave (not the timeout's, not a withdrawal).
type Journal interface {
	CreateApproval(ctx context.Context, ap *store.Approval) error
	AnswerApproval(ctx context.Context, id string, status store.ApprovalStatus, ans store.Answer, person bool) (*store.Approval, bool, error)
	// ConsumeApproval sets ap's mark of use (state namespace ConsumedNS,
	// key ap.ID) to mark, failing with an error that wraps store.ErrExists
	// when the mark is already there. The kernel's journal commits it with
	// an audit record of the use, so that the use is known from the audit
	// log too (UsedApproval).
	ConsumeApproval(ctx context.Context, ap *store.Approval, mark json.RawMessage) error
	// UsedApproval reports whether a record apart from the mark says that
	// ap was used: the gate asks it when it finds no mark (a mark deleted
	// from a shared database), and an error counts as used.
	UsedApproval(ctx context.Context, ap *store.Approval) (bool, error)
}

// storeJournal is the Journal of a gate with none configured: the store.
type storeJournal struct{ st Store }

func (j storeJournal) CreateApproval(ctx context.Context, ap *store.Approval) error {
	return j.st.CreateApproval(ctx, ap)
}

func (j storeJournal) AnswerApproval(ctx context.Context, id string, status store.ApprovalStatus, ans store.Answer, _ bool) (*store.Approval, bool, error) {
	return j.st.AnswerApproval(ctx, id, status, ans)
}

func (j storeJournal) ConsumeApproval(ctx context.Context, ap *store.Approval, mark json.RawMessage) error {
	return j.st.UpdateState(ctx, ConsumedNS, ap.ID, func(old []byte) ([]byte, error) {
		if old != nil {
			return nil, store.ErrExists
		}
		return mark, nil
	})
}

// UsedApproval: a gate on the store alone has only the marks.
func (storeJournal) UsedApproval(context.Context, *store.Approval) (bool, error) { return false, nil }

// Validate reports whether c is a valid configuration.
func (c Config) Validate() error {
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("%w: negative timeout %v", ErrInvalidConfig, c.Timeout)
	case c.Poll < 0:
		return fmt.Errorf("%w: negative poll interval %v", ErrInvalidConfig, c.Poll)
	case c.RetryWindow < 0:
		return fmt.Errorf("%w: negative retry window %v", ErrInvalidConfig, c.RetryWindow)
	case c.AskerGrace < 0:
		return fmt.Errorf("%w: negative asker grace %v", ErrInvalidConfig, c.AskerGrace)
	case c.Default != "" && c.Default != DecisionDeny && c.Default != DecisionApprove:
		return fmt.Errorf("%w: default decision %q (want deny or approve)", ErrInvalidConfig, c.Default)
	}
	return nil
}

// withDefaults fills zero fields. An unrecognised Default becomes "deny":
// New never fails, and a bad value must not open the gate.
func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.RetryWindow <= 0 {
		c.RetryWindow = DefaultRetryWindow
	}
	if c.AskerGrace <= 0 {
		c.AskerGrace = DefaultAskerGrace
	}
	if c.Process == nil {
		c.Process = proc.Check
	}
	if c.Default != DecisionApprove {
		c.Default = DecisionDeny
	}
	return c
}

func (g *Gate) journal() Journal {
	if g.cfg.Journal != nil {
		return g.cfg.Journal
	}
	return storeJournal{g.st}
}

// Store is what the gate needs from storage: the approvals queue, and small
// state to mark approvals consumed. Any store.Store satisfies it.
type Store interface {
	store.ApprovalStore
	store.StateStore
}

// Gate is the HumanGate. It is safe for concurrent use; several gates in
// several processes may share one database.
type Gate struct {
	st  Store
	clk clock.Clock
	cfg Config

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{} // approval ID → in-process waiters
	left    map[string]time.Time                  // approval ID → when its last waiter left without an answer
	subs    map[*subscriber]struct{}
	dropped atomic.Uint64
	started time.Time
	// usedHere holds the approvals this gate consumed within the retry
	// window (ID → when): one whose mark and record of use were both
	// deleted from a shared database is still used here.
	usedHere map[string]time.Time
}

// New returns a gate over st. cfg is filled with defaults; call
// Config.Validate first to reject a bad configuration (an invalid Default is
// treated as "deny").
func New(st Store, clk clock.Clock, cfg Config) *Gate {
	return &Gate{
		st:      st,
		clk:     clk,
		cfg:     cfg.withDefaults(),
		waiters: map[string]map[chan struct{}]struct{}{},
		left:    map[string]time.Time{},
		subs:    map[*subscriber]struct{}{},
		started: clk.Now(),

		usedHere: map[string]time.Time{},
	}
}

// Config returns the effective configuration, defaults filled in.
func (g *Gate) Config() Config { return g.cfg }

// newID returns "apr_" followed by 16 random lower-case base32 characters.
func newID() (string, error) {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("gate: random id: %w", err)
	}
	return "apr_" + strings.ToLower(base32.StdEncoding.EncodeToString(b[:])), nil
}

// Request stores a pending approval for a and its verdict v, and publishes a
// "requested" event. The approval is bound to v.ArgsHash (or a's own hash
// when the verdict carries none), expires Timeout from now and carries the
// configured default decision. A level in v that is not a real level (Unset)
// is stored as approve.
func (g *Gate) Request(ctx context.Context, a action.Action, v action.Verdict) (*store.Approval, error) {
	return g.RequestBy(ctx, a, v, nil)
}

// RequestBy is Request for a request whose asker is known: the approval
// keeps it, and WithdrawGone withdraws the request once the asker is gone.
func (g *Gate) RequestBy(ctx context.Context, a action.Action, v action.Verdict, asker *store.Asker) (*store.Approval, error) {
	id, err := newID()
	if err != nil {
		return nil, err
	}
	hash := v.ArgsHash
	if hash == "" {
		hash = a.ArgsHash()
	}
	kind := a.Kind
	if kind == "" {
		kind = action.InferKind(a.Tool)
	}
	actionID := a.ID
	if actionID == "" {
		actionID = v.ActionID
	}
	v = strictLevels(v)
	now := g.clk.Now()
	ap := &store.Approval{
		ID:              id,
		ActionID:        actionID,
		Tool:            a.Tool,
		Kind:            kind,
		Agent:           a.Agent,
		Session:         a.Session,
		Level:           v.Level,
		ArgsHash:        hash,
		Action:          a,
		Verdict:         v,
		Status:          store.StatusPending,
		CreatedAt:       now,
		Deadline:        now.Add(g.cfg.Timeout),
		DefaultDecision: g.cfg.Default,
	}
	if asker != nil {
		cp := *asker
		ap.Asker = &cp
	}
	if err := g.journal().CreateApproval(ctx, ap); err != nil {
		return nil, fmt.Errorf("gate: create approval: %w", err)
	}
	g.publish(Event{Type: EventRequested, Approval: ap})
	return ap, nil
}

// strictLevels returns v with every level that is not a real level (Unset)
// replaced by Approve, copying what it changes: an undecided verdict is put
// to a person with the full preview, never stored as something less.
func strictLevels(v action.Verdict) action.Verdict {
	v.Level = v.Level.OrStrict()
	if len(v.Reasons) > 0 {
		rs := make([]action.Reason, len(v.Reasons))
		copy(rs, v.Reasons)
		for i := range rs {
			rs[i].Level = rs[i].Level.OrStrict()
		}
		v.Reasons = rs
	}
	if v.Decider != nil {
		d := *v.Decider
		d.Level = d.Level.OrStrict()
		v.Decider = &d
	}
	return v
}

// validateAnswer checks a caller's answer.
func validateAnswer(ans store.Answer) error {
	switch ans.Decision {
	case DecisionApprove, DecisionDeny, DecisionAbort:
	default:
		return fmt.Errorf("%w: decision %q (want approve, deny or abort)", ErrInvalidAnswer, ans.Decision)
	}
	if strings.TrimSpace(ans.Who) == "" {
		return fmt.Errorf("%w: who answered is missing", ErrInvalidAnswer)
	}
	if strings.TrimSpace(ans.Channel) == "" {
		return fmt.Errorf("%w: channel is missing", ErrInvalidAnswer)
	}
	if ans.Who == TimeoutActor || ans.Channel == TimeoutActor || ans.Who == WithdrawnActor || ans.Channel == WithdrawnActor {
		return fmt.Errorf("%w: %q and %q are reserved for the gate's own answers", ErrInvalidAnswer, TimeoutActor, WithdrawnActor)
	}
	switch ans.Remember {
	case RememberNone, RememberOnce, RememberSession, RememberRule:
	default:
		return fmt.Errorf("%w: remember %q (want once, session or rule)", ErrInvalidAnswer, ans.Remember)
	}
	if len(ans.Rule) > 0 {
		if ans.Remember != RememberRule {
			return fmt.Errorf("%w: a rule comes only with remember=rule", ErrInvalidAnswer)
		}
		if !json.Valid(ans.Rule) {
			return fmt.Errorf("%w: the rule is not valid JSON", ErrInvalidAnswer)
		}
	}
	return nil
}

// statusFor maps a decision to the status it moves a pending approval to.
func statusFor(decision string) store.ApprovalStatus {
	switch decision {
	case DecisionApprove:
		return store.StatusApproved
	case DecisionAbort:
		return store.StatusAborted
	default:
		return store.StatusDenied
	}
}

// Answer records a person's answer to approval id. It stamps At from the
// gate's clock; the first terminal answer wins and reports applied=true,
// a later one is recorded with Applied=false. An answer that arrives after
// the deadline of a still-pending approval comes second to the default
// answer, which is applied first — unless it is stricter than the default
// (deny or abort against a default approve), so a late answer can only
// tighten the outcome. Answer wakes in-process waiters and
// publishes an "answered" event. An unknown id returns an error wrapping
// store.ErrNotFound; an invalid answer one wrapping ErrInvalidAnswer.
func (g *Gate) Answer(ctx context.Context, id string, ans store.Answer) (*store.Approval, bool, error) {
	if err := validateAnswer(ans); err != nil {
		return nil, false, err
	}
	cur, err := g.st.GetApproval(ctx, id)
	if err != nil {
		return nil, false, fmt.Errorf("gate: answer %s: %w", id, err)
	}
	// The deadline passed with no one applying the default yet: the default
	// comes first, unless this answer is stricter than it (a person's "deny"
	// after the deadline still beats a default "approve").
	stricter := cur.DefaultDecision == DecisionApprove && ans.Decision != DecisionApprove
	if cur.Status == store.StatusPending && !g.clk.Now().Before(cur.Deadline) && !stricter {
		if _, _, err := g.expire(ctx, cur); err != nil {
			return nil, false, err
		}
	}
	ans.At = g.clk.Now()
	ans.Applied = false
	ap, applied, err := g.journal().AnswerApproval(ctx, id, statusFor(ans.Decision), ans, true)
	if err != nil {
		return nil, false, fmt.Errorf("gate: answer %s: %w", id, err)
	}
	g.wake(id)
	g.publish(Event{Type: EventAnswered, Approval: ap})
	if g.cfg.OnAnswer != nil {
		if err := g.cfg.OnAnswer(ctx, ap, ans, applied); err != nil {
			return ap, applied, err
		}
	}
	return ap, applied, nil
}

// Wait blocks until approval id is terminal and returns it. In-process
// answers wake it at once; answers written by another process are seen at
// the next poll. When the deadline passes, Wait applies the default answer
// itself (Who and Channel "timeout") through the first-answer-wins path.
//
// When the result lets the action run (see Allowed), Wait marks the approval
// consumed: the caller that receives it is the one call it lets through. If
// another call consumed it first, Wait returns the approval with an error
// wrapping ErrConsumed, and the caller must not run the action.
//
// If ctx ends first, Wait returns ctx.Err() and the approval stays pending; a
// later answer is still recorded. Any other error means the answer is unknown
// and the caller must not run the action.
func (g *Gate) Wait(ctx context.Context, id string) (ap *store.Approval, err error) {
	wake, stop := g.listen(id)
	defer func() { stop(ap != nil && ap.Status.Terminal()) }()

	ap, err = g.st.GetApproval(ctx, id)
	if err != nil {
		return nil, g.readErr(ctx, id, err)
	}
	if ap.Status.Terminal() {
		return g.finish(ctx, ap)
	}
	deadline := g.clk.After(ap.Deadline.Sub(g.clk.Now()))
	tick := time.NewTicker(g.cfg.Poll)
	defer tick.Stop()
	for {
		if !g.clk.Now().Before(ap.Deadline) {
			res, _, err := g.expire(ctx, ap)
			if err != nil {
				return nil, err
			}
			return g.finish(ctx, res)
		}
		select {
		case <-ctx.Done():
			stop(false)
			return nil, ctx.Err()
		case <-wake:
		case <-tick.C:
		case <-deadline:
		}
		ap, err = g.st.GetApproval(ctx, id)
		if err != nil {
			return nil, g.readErr(ctx, id, err)
		}
		if ap.Status.Terminal() {
			return g.finish(ctx, ap)
		}
	}
}

// readErr prefers the context's error, so a cancelled caller sees ctx.Err().
func (g *Gate) readErr(ctx context.Context, id string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return fmt.Errorf("gate: wait %s: %w", id, err)
}

// finish consumes an approval that lets its action run.
func (g *Gate) finish(ctx context.Context, ap *store.Approval) (*store.Approval, error) {
	if !Allowed(ap) {
		return ap, nil
	}
	if err := g.consume(ctx, ap); err != nil {
		return ap, err
	}
	return ap, nil
}

// Withdraw ends approval id on behalf of nobody, when the request is no
// longer needed (its asker gave up or is gone, its task was aborted): a
// pending approval becomes withdrawn with the reason — the action does not
// run, and nothing is learnt from it — and whoever waits for it is woken.
// An approval already answered is left as it is (the withdrawal is recorded
// only). It returns the approval as stored afterwards and whether the
// withdrawal decided it.
func (g *Gate) Withdraw(ctx context.Context, id, reason string) (*store.Approval, bool, error) {
	ans := store.Answer{Decision: DecisionWithdraw, Who: WithdrawnActor, Channel: WithdrawnActor, Reason: reason, At: g.clk.Now()}
	res, applied, err := g.journal().AnswerApproval(ctx, id, store.StatusWithdrawn, ans, false)
	if err != nil {
		return nil, false, fmt.Errorf("gate: withdraw %s: %w", id, err)
	}
	if g.cfg.OnAnswer != nil {
		if err := g.cfg.OnAnswer(ctx, res, ans, applied); err != nil {
			return res, applied, err
		}
	}
	if applied {
		g.wake(id)
		g.publish(Event{Type: EventAnswered, Approval: res})
	}
	return res, applied, nil
}

// expire applies the default answer to ap, which is pending and past its
// deadline. It returns the approval as stored afterwards, and whether the
// default was the answer that decided it.
func (g *Gate) expire(ctx context.Context, ap *store.Approval) (*store.Approval, bool, error) {
	decision := ap.DefaultDecision
	if decision != DecisionApprove {
		decision = DecisionDeny // anything unrecognised fails closed
	}
	ans := store.Answer{
		Decision: decision,
		Who:      TimeoutActor,
		Channel:  TimeoutActor,
		Reason:   "no answer before the deadline",
		At:       g.clk.Now(),
	}
	res, applied, err := g.journal().AnswerApproval(ctx, ap.ID, store.StatusExpired, ans, false)
	if err != nil {
		return nil, false, fmt.Errorf("gate: expire %s: %w", ap.ID, err)
	}
	if g.cfg.OnAnswer != nil {
		if err := g.cfg.OnAnswer(ctx, res, ans, applied); err != nil {
			return res, applied, err
		}
	}
	if applied {
		g.wake(ap.ID)
		g.publish(Event{Type: EventExpired, Approval: res})
	}
	return res, applied, nil
}

// ExpireDue applies the default answer to every pending approval whose
// deadline has passed. It returns how many approvals it expired (an approval
// answered meanwhile by someone else is not counted). The daemon runs it
// periodically and at start, after a restart.
func (g *Gate) ExpireDue(ctx context.Context) (int, error) {
	pending, err := g.st.ListApprovals(ctx, store.ApprovalFilter{Status: store.StatusPending})
	if err != nil {
		return 0, fmt.Errorf("gate: list pending: %w", err)
	}
	now := g.clk.Now()
	n := 0
	var errs []error
	for _, ap := range pending {
		if now.Before(ap.Deadline) {
			continue
		}
		_, applied, err := g.expire(ctx, ap)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if applied {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// Pending returns the approvals still waiting for an answer, oldest first.
func (g *Gate) Pending(ctx context.Context) ([]*store.Approval, error) {
	aps, err := g.st.ListApprovals(ctx, store.ApprovalFilter{Status: store.StatusPending})
	if err != nil {
		return nil, fmt.Errorf("gate: list pending: %w", err)
	}
	return aps, nil
}

// Get returns approval id, or an error wrapping store.ErrNotFound.
func (g *Gate) Get(ctx context.Context, id string) (*store.Approval, error) {
	ap, err := g.st.GetApproval(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("gate: get %s: %w", id, err)
	}
	return ap, nil
}

// Allowed reports whether ap's terminal answer lets the action run: a
// person approved it, or the deadline passed with "approve" as the default.
// Anything else — pending, denied, aborted, expired with "deny", a nil or
// inconsistent record, one with no audited record behind it — is false.
func Allowed(ap *store.Approval) bool {
	if ap == nil || ap.Unaudited != "" || ap.Answer == nil || ap.Answer.Decision != DecisionApprove {
		return false
	}
	return ap.Status == store.StatusApproved || ap.Status == store.StatusExpired
}

// listen registers an in-process waiter for id. The channel has room for
// one wake-up, so a wake that arrives while the waiter is reading the store
// is not lost. stop unregisters it (calls after the first do nothing);
// answered says whether the waiter leaves with the answer, else the time it
// left is kept for WithdrawGone.
func (g *Gate) listen(id string) (<-chan struct{}, func(answered bool)) {
	ch := make(chan struct{}, 1)
	g.mu.Lock()
	set := g.waiters[id]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		g.waiters[id] = set
	}
	set[ch] = struct{}{}
	g.mu.Unlock()
	var once sync.Once
	return ch, func(answered bool) {
		once.Do(func() {
			now := g.clk.Now()
			g.mu.Lock()
			defer g.mu.Unlock()
			delete(set, ch)
			if len(set) == 0 && g.waiters[id] != nil {
				delete(g.waiters, id)
			}
			if answered {
				delete(g.left, id)
			} else {
				g.left[id] = now
			}
		})
	}
}

// wake nudges every in-process waiter of id to re-read the store.
func (g *Gate) wake(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for ch := range g.waiters[id] {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already queued
		}
	}
}
