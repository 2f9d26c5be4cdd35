package kernel

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/store"
)

// KeepAction keeps the previous content of the files a judged action is
// about to write, edit or delete, reading the action (with the facts the
// analyzers derived) from its audit record. Adapters that let an agent
// perform the action itself (hooks, the MCP gateway) call it, through the
// daemon, after the verdict allowed the action and before the agent acts.
func (k *Kernel) KeepAction(ctx context.Context, actionID string) error {
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{ActionID: actionID, Types: []string{audit.TypeAction}, Limit: 1})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotKept, err)
	}
	if len(recs) == 0 {
		return fmt.Errorf("%w: no action %s was recorded: %w", ErrNotKept, actionID, store.ErrNotFound)
	}
	var a action.Action
	if err := json.Unmarshal(recs[0].Data, &a); err != nil {
		return fmt.Errorf("%w: the action's record is unreadable: %v", ErrNotKept, err)
	}
	return k.Snapshot(ctx, &a)
}
