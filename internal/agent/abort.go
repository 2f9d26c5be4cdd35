package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// StaleAfter is how old a runner's heartbeat may be before its task counts
// as not running.
const StaleAfter = staleAfter

// NewTaskStore returns the task store over the kernel's database, recording
// each task's lifecycle in its audit log; now defaults to the kernel's clock.
func NewTaskStore(k *kernel.Kernel, now func() time.Time) *task.Store {
	if now == nil {
		now = k.Clock.Now
	}
	return task.NewStore(k.Store, now).WithAudit(k.Audit)
}

// Abort asks task id to stop, on behalf of who through channel: a task that
// is not running ends as aborted at once, and the request it was waiting
// on, if any, is withdrawn so it leaves the approvals queue; a running one
// stops after its current step (first request) or at once (second), and
// its runner withdraws what it waited on.
func Abort(ctx context.Context, k *kernel.Kernel, ts *task.Store, id, who, channel string) (*task.Task, error) {
	before, err := ts.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	t, err := ts.AbortBy(ctx, before.ID, StaleAfter, who, channel)
	if err != nil {
		return t, err
	}
	if t.Status == task.Aborted && before.Pending != "" {
		if _, _, werr := k.Withdraw(ctx, before.Pending, fmt.Sprintf("the task %s was aborted by %s", t.ID, who)); werr != nil {
			return t, fmt.Errorf("the task is aborted, but withdrawing its pending request %s failed: %w", before.Pending, werr)
		}
	}
	return t, nil
}

// withdrawPending withdraws the request an aborted task was waiting on.
func (r *run) withdrawPending(ctx context.Context) error {
	id := r.t.Pending
	if id == "" && r.t.PendingStep != nil {
		id = r.t.PendingStep.Approval
	}
	if id == "" {
		return nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, _, err := r.l.k.Withdraw(wctx, id, "the task "+r.t.ID+" was aborted"); err != nil {
		return errors.New("withdrawing the aborted task's pending request: " + err.Error())
	}
	return nil
}
