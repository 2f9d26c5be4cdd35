package hooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/kernel"
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
}

// ErrNoAnswer means no person answered within the hook's wait.
var ErrNoAnswer = errors.New("no person answered in time")

// apiMaxWait is the longest single long-poll the daemon accepts.
const apiMaxWait = 2 * time.Minute

// Daemon is the Backend of a running daemon, reached through its API.
type Daemon struct {
	C *client.Client
	// OpenKernel opens the kernel in this process for what the API does
	// not offer yet (keeping previous file content); the store is shared.
	OpenKernel func(ctx context.Context) (*kernel.Kernel, error)
	// Now defaults to time.Now.
	Now func() time.Time
}

var _ Backend = (*Daemon)(nil)

// Decide submits a and, while a person has not answered, long-polls its
// status until the answer or opts.MaxWait.
func (d *Daemon) Decide(ctx context.Context, a *action.Action, opts DecideOptions) (Decision, error) {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	deadline := now().Add(opts.MaxWait)
	wait := min(opts.MaxWait, apiMaxWait)
	if opts.AskConfirm {
		wait = 0 // learn the level first: a confirm goes to the agent's prompt
	}
	o, err := d.C.Submit(ctx, a, wait)
	if err != nil {
		return Decision{}, fmt.Errorf("submitting the call to the Overseer daemon: %w", err)
	}
	if o.ActionID != "" {
		a.ID = o.ActionID
	}
	for o.Decision == "pending" {
		if opts.AskConfirm && o.Level == action.Confirm {
			return Decision{Outcome: Ask, ActionID: a.ID, Level: o.Level,
				Reason: "Overseer asks a person to confirm this call: " + reasonOf(o)}, nil
		}
		left := deadline.Sub(now())
		if left <= 0 {
			return Decision{ActionID: a.ID, Level: o.Level,
				Reason: noAnswerReason(opts.MaxWait, o.Approval)}, nil
		}
		o, err = d.C.Status(ctx, a.ID, min(left, apiMaxWait))
		if err != nil {
			return Decision{}, fmt.Errorf("waiting for a person's answer (the daemon stopped answering): %w", err)
		}
	}
	return outcomeDecision(a.ID, o), nil
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
	switch o.Decision {
	case "allow":
		d.Outcome = Allow
		d.Reason = "allowed (" + o.Level.String() + ")"
		if o.Approval != nil {
			d.Reason = "allowed: " + o.Reason
		}
	default: // deny, or anything this hook does not know
		d.Outcome = Deny
		switch {
		case o.Approval != nil:
			d.Reason = "denied: " + o.Reason
		case o.Verdict != nil:
			d.Reason = "blocked: " + o.Verdict.Summary()
		default:
			d.Reason = "denied: " + o.Reason
		}
	}
	if o.Decision != "allow" && o.Decision != "deny" {
		d.Reason = fmt.Sprintf("denied: the daemon answered %q", o.Decision)
	}
	return d
}

// Keep opens the kernel in this process and keeps the previous content.
func (d *Daemon) Keep(ctx context.Context, a *action.Action) error {
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
	switch {
	case v.Level.RunsWithoutPerson():
		d.Outcome, d.Reason = Allow, "allowed ("+v.Level.String()+")"
	case v.Level == action.Confirm && opts.AskConfirm:
		d.Outcome, d.Reason = Ask, "Overseer asks a person to confirm this call: "+v.Summary()
	case v.Level.NeedsPerson():
		d.Reason = fmt.Sprintf("denied: %s — %s", v.Summary(), NoDaemonReason)
	default:
		d.Reason = "blocked: " + v.Summary()
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
