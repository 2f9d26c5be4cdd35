package watch

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/frontend/hooks"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// Answer is what the watcher does with a prompt.
type Answer int

const (
	// Leave is the zero value: type nothing, a person answers at the
	// terminal.
	Leave Answer = iota
	// Yes allows the call once.
	Yes
	// No refuses it.
	No
)

func (a Answer) String() string {
	switch a {
	case Yes:
		return "yes"
	case No:
		return "no"
	}
	return "leave"
}

// Ruling is the firewall's judgement of a prompt's call, and a person's
// answer when one was asked.
type Ruling struct {
	Answer   Answer
	Level    action.Level
	Reason   string
	ActionID string
}

// Judge has Overseer judge an action and, when its level asks for a person,
// waits for the answer (the HumanGate, answered from any channel).
type Judge interface {
	Judge(ctx context.Context, a *action.Action) (Ruling, error)
	Record(ctx context.Context, r kernel.Result) error
}

// HookJudge judges through the same backend as the agents' hooks: the
// daemon when one runs, else the kernel in this process against the same
// database. Without a daemon nobody can be asked, so a prompt that needs a
// person is left to the person at the terminal.
type HookJudge struct {
	B hooks.Backend
	// MaxWait bounds the wait for a person; when it runs out the prompt is
	// left on screen.
	MaxWait time.Duration
}

var _ Judge = (*HookJudge)(nil)

// Judge implements Judge.
func (j *HookJudge) Judge(ctx context.Context, a *action.Action) (Ruling, error) {
	submitted, _ := ctx.Value(submittedKey{}).(func(string))
	d, err := j.B.Decide(ctx, a, hooks.DecideOptions{MaxWait: j.MaxWait, Submitted: submitted})
	if err != nil {
		return Ruling{}, err
	}
	r := Ruling{Level: d.Level, Reason: d.Reason, ActionID: d.ActionID}
	switch {
	case d.Outcome == hooks.Allow:
		r.Answer = Yes
	case d.Outcome == hooks.Ask:
		// Not asked for; left to the person at the terminal all the same.
		r.Answer = Leave
	case strings.Contains(d.Reason, hooks.NoDaemonReason), strings.Contains(d.Reason, hooks.ErrNoAnswer.Error()):
		r.Answer = Leave
	case d.Level == action.Block || d.Level.NeedsPerson():
		r.Answer = No
	default:
		return Ruling{}, errors.New("the judgement was neither allow nor deny")
	}
	return r, nil
}

// submittedKey carries, in a judgement's context, what to call with the
// action's id once it is submitted (WithSubmitted).
type submittedKey struct{}

// WithSubmitted returns ctx telling a Judge to call f with the action's id
// as soon as it has one, before any wait for a person.
func WithSubmitted(ctx context.Context, f func(actionID string)) context.Context {
	return context.WithValue(ctx, submittedKey{}, f)
}

// Record implements Judge.
func (j *HookJudge) Record(ctx context.Context, r kernel.Result) error { return j.B.Record(ctx, r) }
