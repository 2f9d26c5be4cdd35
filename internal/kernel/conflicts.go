package kernel

import (
	"context"

	"github.com/overseer-dev/overseer/internal/guard/conflict"
)

// Conflict re-exports the conflict guard's record for front ends.
type Conflict = conflict.Conflict

func (k *Kernel) conflictGuard() *conflict.Guard {
	for _, o := range k.observers {
		if g, ok := o.(*conflict.Guard); ok {
			return g
		}
	}
	return nil
}

// Conflicts lists the resources that several sessions touched within the
// conflict window (the console's current conflicts), newest first.
func (k *Kernel) Conflicts(ctx context.Context) ([]Conflict, error) {
	g := k.conflictGuard()
	if g == nil {
		return []Conflict{}, nil
	}
	return g.Current(ctx)
}

// PruneConflicts forgets touches older than the conflict window.
func (k *Kernel) PruneConflicts(ctx context.Context) (int, error) {
	g := k.conflictGuard()
	if g == nil {
		return 0, nil
	}
	return g.Prune(ctx)
}
