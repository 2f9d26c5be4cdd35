// Package guard defines the hard guards' common shape. A guard analyses
// actions of the kinds it knows, fills in the action's derived facts, and
// reports findings; the firewall engine turns findings into reasons.
// Sub-packages implement the guards (shell, paths, net, sql).
package guard

import (
	"context"

	"github.com/overseer-dev/overseer/internal/action"
)

// Finding is one thing a guard found about an action.
type Finding struct {
	// Check names what fired, as "<guard>.<check>", e.g. "shell.rm-root".
	Check string
	// Level is the level the finding asks for.
	Level action.Level
	// Hard findings are floors: no rule of either policy layer can lower the
	// action below them. Soft findings are the guard's classification, used
	// when no policy rule decides (for example "ls" is read-only: auto).
	Hard    bool
	Message string
	// Preview shows what the action would do, for a person (optional).
	Preview *action.Preview
}

// Guard checks actions. Check may add to a.Facts. An error means the guard
// could not judge; the engine then fails closed (never auto).
type Guard interface {
	Name() string
	Check(ctx context.Context, a *action.Action) ([]Finding, error)
}

// Observer is a guard that remembers what recorded actions did, across
// processes (in the store): the egress guard remembers which secrets a
// session read and where it sent data. The kernel calls Observe after it
// records an action and its verdict (answered false: level is the
// verdict's), and again when a person approves it (answered true). Evaluate
// alone (eval, dry runs) observes nothing.
type Observer interface {
	Observe(ctx context.Context, a *action.Action, level action.Level, answered bool) error
}

// RefusalObserver is an Observer that is also told when a person refused
// an action it observed before the answer (or the approval ran out or was
// withdrawn): the action did not run, so what it would have done may be
// forgotten.
type RefusalObserver interface {
	Refused(ctx context.Context, a *action.Action) error
}
