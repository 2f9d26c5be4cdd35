package hooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/apiauth"
	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/frontend/hookcore"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/proc"
	"github.com/overseer-dev/overseer/internal/store"
)

// Backend is what a hook needs from Overseer. An error from Decide or Keep
// means the call must not run.
type Backend interface {
	// Decide judges and records a. When the verdict asks a person, it
	// holds the call up to opts.MaxWait for the answer (or, with
	// opts.AskConfirm and a confirm verdict, returns Ask at once).
	Decide(ctx context.Context, a *action.Action, opts DecideOptions) (Decision, error)
	// Keep keeps the previous content of the files a (whose path facts
	// are filled) is about to write or delete, for `overseer undo`.
	Keep(ctx context.Context, a *action.Action) error
	// Record writes what a call did into the audit log.
	Record(ctx context.Context, r kernel.Result) error
}

// DecideOptions tune Decide.
type DecideOptions struct {
	MaxWait    time.Duration
	AskConfirm bool
	// Submitted, when set, learns the id the daemon gave the action as soon
	// as it is submitted, before the wait for a person (the watcher shows
	// which request a pane waits on).
	Submitted func(actionID string)
}

// ErrNoAnswer means no person answered within the hook's wait.
var ErrNoAnswer = errors.New("no person answered in time")

// apiMaxWait is the longest single long-poll the daemon accepts.
const apiMaxWait = 2 * time.Minute

// Daemon is the Backend of a running daemon, reached through its API.
type Daemon struct {
	C *client.Client
	// Redial finds the daemon again when it stops answering while a call
	// is held (it may be restarting, on another port); the call keeps
	// waiting until its max wait. Nil: the first failure denies the call.
	Redial func() (*client.Client, error)
	// OpenKernel opens the kernel in this process for what the API does
	// not offer yet (keeping previous file content); the store is shared.
	OpenKernel func(ctx context.Context) (*kernel.Kernel, error)
	// Now defaults to time.Now.
	Now func() time.Time
	// Known returns the fingerprints of this process's environment's
	// secret values (the agent's: the daemon's own environment is
	// another), sent with each call (kernel.EnvFingerprints). Called once,
	// on the first call judged; nil sends none.
	Known func() []kernel.KnownValue

	known     []kernel.KnownValue
	knownDone bool
}

var _ Backend = (*Daemon)(nil)

// redialEvery is how often a held call looks for a daemon that stopped
// answering.
const redialEvery = 500 * time.Millisecond

// Withdrawal reasons the hook gives when it stops waiting.
const (
	reasonHandedToAgent = "the call was handed to the agent's own permission prompt"
	reasonInterrupted   = "the hook was interrupted: the agent stopped waiting for the answer"
)

// Decide submits a and, while a person has not answered, long-polls its
// status until the answer or opts.MaxWait. The daemon learns who waits (this
// process, until when, polling): should the hook be killed, its request is
// withdrawn instead of staying in the queue; when the hook gives up itself
// (the wait ran out, the call went to the agent's prompt, it was
// interrupted) it withdraws the request on its way out. The lean hook entry
// does the same with hookcore.Waiter over its own client: a change here
// goes there too (TestLeanHookWithDaemon runs both binaries on the same
// calls).
func (d *Daemon) Decide(ctx context.Context, a *action.Action, opts DecideOptions) (Decision, error) {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	deadline := now().Add(opts.MaxWait)
	// The submission returns at once (wait 0): the hook learns the action's
	// id, and so can withdraw its request if it is interrupted while it
	// waits; a confirm may go to the agent's prompt. The wait is a
	// long-poll of the outcome.
	asker, key := selfAsker(opts.MaxWait)
	if !d.knownDone && d.Known != nil {
		d.known, d.knownDone = d.Known(), true
	}
	// The facts Overseer derives (the paths a shell command changes) come
	// back with the answer: the hook keeps those files without asking again.
	sopts := client.SubmitOptions{Asker: asker, Known: d.known, Facts: true}
	o, err := d.C.SubmitWith(ctx, a, sopts)
	// Over a submission quota nothing was recorded: try again when the
	// daemon says, while there is time.
	for ra := retryAfter(err); ra > 0 && now().Add(ra).Before(deadline); ra = retryAfter(err) {
		select {
		case <-ctx.Done():
			return Decision{}, ctx.Err()
		case <-time.After(ra):
		}
		o, err = d.C.SubmitWith(ctx, a, sopts)
	}
	if err != nil {
		if notConnected(err) || errors.Is(err, apiauth.ErrImpostor) {
			// Nothing reached the daemon: none listens, or the server at
			// its address is not it (it learnt nothing it could use, and
			// its answer is not taken).
			return Decision{}, fmt.Errorf("%w: %v", client.ErrNoDaemon, err)
		}
		return Decision{}, fmt.Errorf("submitting the call to the Overseer daemon: %w", err)
	}
	if o.ActionID != "" {
		a.ID = o.ActionID
		if opts.Submitted != nil {
			opts.Submitted(a.ID)
		}
	}
	if o.Facts != nil && a.Kind == action.KindShell {
		a.Facts = *o.Facts // as Facts below would read them from the record
	}
	for o.Decision == "pending" {
		if opts.AskConfirm && o.Level == action.Confirm {
			d.withdraw(a.ID, key, reasonHandedToAgent)
			return Decision{Outcome: Ask, ActionID: a.ID, Level: o.Level,
				Reason: "Overseer asks a person to confirm this call: " + reasonOf(o)}, nil
		}
		left := deadline.Sub(now())
		if left <= 0 {
			d.withdraw(a.ID, key, fmt.Sprintf("the hook's wait (max_wait %s) ran out", opts.MaxWait))
			return Decision{ActionID: a.ID, Level: o.Level,
				Reason: noAnswerReason(opts.MaxWait, o.Approval)}, nil
		}
		o, err = d.status(ctx, a.ID, left, deadline, now)
		if err != nil {
			if ctx.Err() != nil {
				d.withdraw(a.ID, key, reasonInterrupted)
			}
			return Decision{}, err
		}
	}
	return outcomeDecision(a.ID, o), nil
}

// retryAfter is the wait a 429 answer asks for, or 0.
func retryAfter(err error) time.Duration {
	var ae *client.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests {
		return ae.RetryAfter
	}
	return 0
}

// status long-polls the outcome of action id for up to left. When the
// daemon stops answering, it looks for it again (Redial) until deadline.
func (d *Daemon) status(ctx context.Context, id string, left time.Duration, deadline time.Time, now func() time.Time) (*client.Outcome, error) {
	for {
		o, err := d.C.Status(ctx, id, min(left, apiMaxWait))
		if err == nil {
			return o, nil
		}
		var apiErr *client.APIError
		if ctx.Err() != nil || errors.As(err, &apiErr) || d.Redial == nil {
			return nil, fmt.Errorf("waiting for a person's answer (the daemon stopped answering): %w", err)
		}
		// The daemon went away, perhaps to restart: the request is kept in
		// its database, so wait for it to come back.
		for {
			if left = deadline.Sub(now()); left <= 0 {
				return nil, fmt.Errorf("waiting for a person's answer: the daemon stopped answering and was not back within the wait: %w", err)
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for a person's answer: %w", ctx.Err())
			case <-time.After(min(redialEvery, left)):
			}
			if c, derr := d.Redial(); derr == nil {
				d.C = c
				break
			}
		}
	}
}

// withdraw tells the daemon that nobody waits for action id's answer any
// more. It is best effort, and runs even when ctx has ended: the daemon
// notices a gone hook by itself as well.
func (d *Daemon) withdraw(id, key, reason string) {
	if id == "" || key == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	_ = d.C.Withdraw(ctx, id, key, reason)
}

// withdrawTimeout bounds the hook's withdrawal on its way out.
const withdrawTimeout = hookcore.WithdrawTimeout

// selfAsker describes this hook process to the daemon as the asker of a
// call it holds up to wait, with a fresh key to withdraw it.
func selfAsker(wait time.Duration) (*client.Asker, string) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return &client.Asker{Kind: "hook", Wait: wait.String(), Hold: true}, ""
	}
	key := hex.EncodeToString(b[:])
	a := &client.Asker{Kind: "hook", Wait: wait.String(), Hold: true, Key: key}
	if id, ok := proc.Self(); ok {
		a.PID, a.Start, a.Host = id.PID, id.Start, id.Host
	}
	return a, key
}

// notConnected reports whether err is a failure to connect at all (nothing
// was sent): the daemon named in the address file is not running.
func notConnected(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" && errors.Is(err, syscall.ECONNREFUSED)
}

func reasonOf(o *client.Outcome) string {
	if o.Verdict != nil {
		return o.Verdict.Summary()
	}
	return o.Reason
}

func noAnswerReason(wait time.Duration, apr *store.Approval) string {
	msg := fmt.Sprintf("denied: %v after %s", ErrNoAnswer, wait)
	if apr != nil {
		msg += fmt.Sprintf(" (approval %s)", apr.ID)
	}
	return msg
}

// outcomeDecision turns the daemon's final outcome into a decision.
func outcomeDecision(id string, o *client.Outcome) Decision {
	d := Decision{ActionID: id, Level: o.Level}
	switch {
	case o.Decision == "allow":
		d.Outcome = Allow
		d.Reason = "allowed (" + o.Level.String() + ")"
		if o.Approval != nil {
			d.Reason = o.Reason // "approved by ann via web: …"
		}
	case o.Decision != "deny":
		d.Reason = fmt.Sprintf("denied: the daemon answered %q", o.Decision)
	case o.Approval != nil:
		d.Reason = o.Reason // "denied by ann via cli: …", or the timeout's
		d.Stop = o.Approval.Status == store.StatusAborted
	case o.Verdict != nil:
		d.Reason = "blocked: " + o.Verdict.Summary()
		d.Stop = o.Verdict.Stop
	default:
		d.Reason = "denied: " + o.Reason
	}
	return d
}

// Keep asks the daemon to keep the previous content of what the action
// changes; if the daemon cannot (an older daemon, or the action is not
// recorded there), it opens the kernel in this process and keeps it here.
func (d *Daemon) Keep(ctx context.Context, a *action.Action) error {
	if a.ID != "" && d.C != nil && d.C.Keep(ctx, a.ID) == nil {
		return nil
	}
	if d.OpenKernel == nil {
		return fmt.Errorf("%w: no way to reach the undo store", kernel.ErrNotKept)
	}
	k, err := d.OpenKernel(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", kernel.ErrNotKept, err)
	}
	defer k.Close()
	return k.Snapshot(ctx, a)
}

// Record posts the result to the daemon.
func (d *Daemon) Record(ctx context.Context, r kernel.Result) error {
	return d.C.Result(ctx, r)
}

// InProcess is the Backend used when no daemon runs: the kernel in this
// process, on the same store. Auto, notify and block verdicts work as with
// a daemon; a verdict that needs a person is denied (there is nobody to
// ask), with a reason that says how to start the daemon — unless
// AskConfirm hands a confirm to the agent's own prompt.
type InProcess struct {
	K *kernel.Kernel
}

var _ Backend = (*InProcess)(nil)

// NoDaemonReason is told to the agent when a call needs a person and no
// daemon runs.
const NoDaemonReason = "this call needs a person's answer, but no Overseer daemon is running to ask one. " +
	"Start it with `overseer serve` (and answer with `overseer approve`), then retry"

// Decide submits a to the in-process kernel.
func (p *InProcess) Decide(ctx context.Context, a *action.Action, opts DecideOptions) (Decision, error) {
	sub, err := p.K.Submit(ctx, a)
	if err != nil {
		return Decision{}, err
	}
	v := sub.Verdict
	d := Decision{ActionID: a.ID, Level: v.Level}
	withdraw := ""
	switch {
	case v.Level.RunsWithoutPerson():
		d.Outcome, d.Reason = Allow, "allowed ("+v.Level.String()+")"
	case v.Level == action.Confirm && opts.AskConfirm:
		d.Outcome, d.Reason = Ask, "Overseer asks a person to confirm this call: "+v.Summary()
		withdraw = reasonHandedToAgent
	case v.Level.NeedsPerson():
		d.Reason = fmt.Sprintf("denied: %s — %s", v.Summary(), NoDaemonReason)
		withdraw = "no Overseer daemon ran to ask a person; the hook denied the call"
	default:
		d.Reason = "blocked: " + v.Summary()
		d.Stop = v.Stop
	}
	// Nobody will wait for the request opened for the call: withdraw it,
	// so that a daemon started later does not show it as waiting.
	if withdraw != "" && sub.Approval != nil {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
		defer cancel()
		if _, _, err := p.K.Withdraw(wctx, sub.Approval.ID, withdraw); err != nil {
			return Decision{}, fmt.Errorf("withdrawing the request nobody will answer: %w", err)
		}
	}
	return d, nil
}

// Keep keeps the previous content through the kernel.
func (p *InProcess) Keep(ctx context.Context, a *action.Action) error { return p.K.Snapshot(ctx, a) }

// Record writes the result through the kernel.
func (p *InProcess) Record(ctx context.Context, r kernel.Result) error {
	_, err := p.K.RecordResult(ctx, r)
	return err
}

// DialDaemon returns a client of the daemon named in home's address file,
// without the health check of client.Discover: the hook's first request is
// its check, and a call that cannot even connect (Daemon.Decide reports
// ErrNoDaemon then) is judged in this process instead — nothing reached the
// daemon, so nothing was decided there. ErrNoDaemon means no daemon is
// named.
func DialDaemon(home string) (*client.Client, error) {
	b, err := os.ReadFile(filepath.Join(home, kernel.AddrFile))
	if err != nil {
		return nil, client.ErrNoDaemon
	}
	var info client.AddrInfo
	if err := json.Unmarshal(b, &info); err != nil || info.Addr == "" {
		return nil, client.ErrNoDaemon
	}
	tok, _ := os.ReadFile(filepath.Join(home, kernel.TokenFile))
	if strings.TrimSpace(string(tok)) == "" {
		// Without the token the daemon's answers cannot be told from
		// another server's (package apiauth): judge in this process.
		return nil, client.ErrNoDaemon
	}
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, DisableCompression: true}
	return &client.Client{Base: "http://" + info.Addr, Token: strings.TrimSpace(string(tok)),
		HTTP: &http.Client{Transport: tr}}, nil
}

// Auto is the Backend of `overseer hook`: the daemon named in Home's
// address file when it runs, else the kernel in this process on the same
// store (opened only when needed, and at most once).
type Auto struct {
	Home       string
	OpenKernel func(ctx context.Context) (*kernel.Kernel, error)

	daemon *Daemon
	k      *kernel.Kernel
}

var _ Backend = (*Auto)(nil)

// NewAuto prepares the backend; it does no I/O beyond reading the daemon's
// address file.
func NewAuto(home string, open func(ctx context.Context) (*kernel.Kernel, error)) *Auto {
	a := &Auto{Home: home, OpenKernel: open}
	if c, err := DialDaemon(home); err == nil {
		a.daemon = &Daemon{C: c, OpenKernel: a.kernel, Redial: func() (*client.Client, error) { return DialDaemon(home) },
			Known: func() []kernel.KnownValue { return kernel.EnvFingerprints(home, os.Environ()) }}
	}
	return a
}

// kernel opens the in-process kernel once; Close closes it.
func (a *Auto) kernel(ctx context.Context) (*kernel.Kernel, error) {
	if a.k != nil {
		return a.k, nil
	}
	if a.OpenKernel == nil {
		return nil, errors.New("no way to open Overseer's kernel")
	}
	k, err := a.OpenKernel(ctx)
	if err != nil {
		return nil, err
	}
	a.k = k
	return k, nil
}

// Close releases the in-process kernel, if one was opened.
func (a *Auto) Close() {
	if a.k != nil {
		_ = a.k.Close()
		a.k = nil
	}
}

func (a *Auto) inProcess(ctx context.Context) (*InProcess, error) {
	k, err := a.kernel(ctx)
	if err != nil {
		return nil, err
	}
	return &InProcess{K: k}, nil
}

// Decide asks the daemon; when none runs (or it cannot be connected to at
// all), the kernel in this process.
func (a *Auto) Decide(ctx context.Context, act *action.Action, opts DecideOptions) (Decision, error) {
	if a.daemon != nil {
		d, err := a.daemon.Decide(ctx, act, opts)
		if !errors.Is(err, client.ErrNoDaemon) {
			return d, err
		}
		a.daemon = nil
	}
	p, err := a.inProcess(ctx)
	if err != nil {
		return Decision{}, err
	}
	return p.Decide(ctx, act, opts)
}

// Keep keeps the previous content through the kernel in this process (the
// daemon's API has no endpoint for it yet; the store is shared).
func (a *Auto) Keep(ctx context.Context, act *action.Action) error {
	k, err := a.kernel(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", kernel.ErrNotKept, err)
	}
	return k.Snapshot(ctx, act)
}

// Record reports a result to the daemon, or writes it in this process.
func (a *Auto) Record(ctx context.Context, r kernel.Result) error {
	if a.daemon != nil {
		err := a.daemon.Record(ctx, r)
		if err == nil || !notConnected(err) {
			return err
		}
		a.daemon = nil
	}
	p, err := a.inProcess(ctx)
	if err != nil {
		return err
	}
	return p.Record(ctx, r)
}

// FactsSource is an optional ability of a Backend: the facts Overseer's
// analyzers derived for an action it judged (the paths a shell command
// deletes or writes, …), so the hook need not analyse the call again.
type FactsSource interface {
	Facts(ctx context.Context, actionID string) (action.Facts, error)
}

// Facts reads the facts of a judged action from the daemon's audit record
// of it.
func (d *Daemon) Facts(ctx context.Context, actionID string) (action.Facts, error) {
	u := d.C.Base + "/api/v1/audit?type=action&limit=1&action_id=" + url.QueryEscape(actionID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return action.Facts{}, err
	}
	check := d.C.Sign(req)
	hc := d.C.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return action.Facts{}, err
	}
	defer resp.Body.Close()
	if err := check(resp); err != nil {
		return action.Facts{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return action.Facts{}, fmt.Errorf("reading the action's record: HTTP %d", resp.StatusCode)
	}
	var recs []store.AuditRecord
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxInput)).Decode(&recs); err != nil {
		return action.Facts{}, fmt.Errorf("reading the action's record: %w", err)
	}
	if len(recs) == 0 {
		return action.Facts{}, fmt.Errorf("no record of action %s", actionID)
	}
	var a action.Action
	if err := json.Unmarshal(recs[0].Data, &a); err != nil {
		return action.Facts{}, fmt.Errorf("reading the action's record: %w", err)
	}
	return a.Facts, nil
}

// Facts reads the facts from the daemon; the kernel in this process fills
// the action's facts itself while judging it.
func (a *Auto) Facts(ctx context.Context, actionID string) (action.Facts, error) {
	if a.daemon == nil {
		return action.Facts{}, errors.New("no daemon")
	}
	return a.daemon.Facts(ctx, actionID)
}
