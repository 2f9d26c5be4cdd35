package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/undo"
)

// AnomalyEvent is an anomaly that was detected, with what was done about
// it: the agent stopped, its last reversible actions rolled back.
type AnomalyEvent struct {
	ID       string `json:"id"`
	RuleID   string `json:"rule_id"`
	RuleName string `json:"rule_name"`
	Agent    string `json:"agent"`
	Session  string `json:"session,omitempty"`
	Tool     string `json:"tool"`
	// ActionID is the call that crossed the threshold (refused when the
	// rule stops the agent).
	ActionID      string    `json:"action_id"`
	At            time.Time `json:"at"`
	Count         int       `json:"count"`
	WindowSeconds int       `json:"window_seconds"`
	// Baseline is the agent's usual number of such calls per window (-1:
	// not asked for or unknown).
	Baseline float64  `json:"baseline"`
	Action   string   `json:"action"`
	Message  string   `json:"message"`
	Channels []string `json:"channels,omitempty"`
	// Stopped is set when the call was refused and the agent asked to
	// stop; Paused when the agent was paused (PauseError: why not).
	Stopped    bool   `json:"stopped"`
	Paused     bool   `json:"paused,omitempty"`
	PauseError string `json:"pause_error,omitempty"`
	// Rollbacks are the rollbacks done for the event: the automatic one
	// and any a person asked for later.
	Rollbacks []Rollback `json:"rollbacks,omitempty"`
}

// Rollback is one rollback of an agent's last reversible actions.
type Rollback struct {
	At    time.Time `json:"at"`
	Who   string    `json:"who"`
	Depth int       `json:"depth"`
	// Undone are the actions undone, newest first.
	Undone []RolledBack `json:"undone"`
	// Skipped are actions with kept content that a rollback never
	// reverses: shell commands are only ever stopped.
	Skipped []RolledBack `json:"skipped,omitempty"`
}

// RolledBack is one action a rollback undid (or skipped), and the audit
// record of it.
type RolledBack struct {
	EventID  string   `json:"event_id,omitempty"`
	ActionID string   `json:"action_id"`
	Tool     string   `json:"tool"`
	Kind     string   `json:"kind,omitempty"`
	At       string   `json:"at,omitempty"` // when the action was submitted
	Paths    []string `json:"paths,omitempty"`
	Files    int      `json:"files,omitempty"`
	Error    string   `json:"error,omitempty"`
	Reason   string   `json:"reason,omitempty"` // why it was skipped
	Who      string   `json:"who,omitempty"`
}

// anomalyDetected responds to an anomaly finding of a recorded verdict:
// the anomaly_detected record first, then pausing the agent and rolling
// back its last reversible actions as the rule says, each step audited.
func (k *Kernel) anomalyDetected(ctx context.Context, a *action.Action, f autorule.Finding) {
	now := k.Clock.Now()
	ev := &AnomalyEvent{ID: NewID("anev_"), RuleID: f.RuleID, RuleName: f.RuleName, Agent: a.Agent, Session: a.Session,
		Tool: a.Tool, ActionID: a.ID, At: now, Count: f.Count, Baseline: f.Baseline, Action: f.Action,
		Message: f.Message, Channels: f.Channels, Stopped: f.Stop}
	depth := autorule.DefaultRollback
	if r, err := k.AnomalyRule(ctx, f.RuleID); err == nil {
		ev.WindowSeconds, depth = r.WindowSeconds, r.RollbackDepth()
	}
	// Held for the window: the burst's next calls do not fire again.
	k.controls.holds.Set(ev.RuleID, ev.Agent, f.HoldUntil)
	if _, err := k.Audit.Append(ctx, audit.Entry{Type: TypeAnomalyDetected, ActionID: a.ID, Agent: a.Agent,
		Session: a.Session, Tool: a.Tool, Data: ev}); err != nil {
		ev.Message += "; recording it failed: " + err.Error()
	}
	if f.Stop {
		if err := k.pauseAgent(ctx, a.Agent, f.Message); err != nil {
			ev.PauseError = err.Error()
		} else {
			ev.Paused = true
		}
	}
	if f.Action == autorule.AnomalyStopRollback {
		rb, _ := k.rollbackAgent(ctx, ev, depth, ControlsActor, now)
		ev.Rollbacks = append(ev.Rollbacks, rb)
	}
	_ = k.putAnomalyEvent(ctx, ev)
}

func (k *Kernel) putAnomalyEvent(ctx context.Context, ev *AnomalyEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return k.Store.UpdateState(ctx, AnomalyEventNS, ev.ID, func([]byte) ([]byte, error) { return b, nil })
}

// AnomalyEvents returns the detected anomalies, newest first.
func (k *Kernel) AnomalyEvents(ctx context.Context) ([]AnomalyEvent, error) {
	raw, err := k.Store.ListState(ctx, AnomalyEventNS)
	if err != nil {
		return nil, err
	}
	out := make([]AnomalyEvent, 0, len(raw))
	for id, b := range raw {
		var ev AnomalyEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			return nil, fmt.Errorf("anomaly event %s: %w", id, err)
		}
		out = append(out, ev)
	}
	slices.SortFunc(out, func(a, b AnomalyEvent) int { return b.At.Compare(a.At) })
	return out, nil
}

// AnomalyEvent returns one event, or an error wrapping store.ErrNotFound.
func (k *Kernel) AnomalyEvent(ctx context.Context, id string) (*AnomalyEvent, error) {
	b, err := k.Store.GetState(ctx, AnomalyEventNS, id)
	if err != nil {
		return nil, fmt.Errorf("anomaly event %s: %w", id, err)
	}
	var ev AnomalyEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, err
	}
	return &ev, nil
}

// RollbackAnomaly is a person's rollback for an event: the agent's last
// depth (0: the rule's depth, else 10) reversible actions up to the
// event's time that are not undone yet, newest first, each audited.
func (k *Kernel) RollbackAnomaly(ctx context.Context, id string, depth int, who string) (*Rollback, error) {
	ev, err := k.AnomalyEvent(ctx, id)
	if err != nil {
		return nil, err
	}
	if depth <= 0 {
		depth = autorule.DefaultRollback
		if r, err := k.AnomalyRule(ctx, ev.RuleID); err == nil {
			depth = r.RollbackDepth()
		}
	}
	depth = min(depth, autorule.MaxRollback)
	rb, err := k.rollbackAgent(ctx, ev, depth, who, ev.At)
	ev.Rollbacks = append(ev.Rollbacks, rb)
	if perr := k.putAnomalyEvent(ctx, ev); perr != nil {
		err = errors.Join(err, perr)
	}
	return &rb, err
}

// rollbackScan bounds how many of the agent's recorded actions a rollback
// looks through for reversible ones.
const rollbackScan = 5000

// rollbackAgent undoes, newest first, the last depth reversible actions
// of the event's agent submitted at or before before: the actions whose
// previous file contents the undo store kept and that are not undone yet.
// Shell commands are never reversed (nor re-run): they are listed as
// skipped. The undo store writes only the paths it recorded, through a
// temporary file and a rename (a link planted at a path is replaced, not
// followed) and refuses a path whose directory now leads elsewhere. Each
// undone action is a rolled_back audit record.
func (k *Kernel) rollbackAgent(ctx context.Context, ev *AnomalyEvent, depth int, who string, before time.Time) (Rollback, error) {
	rb := Rollback{At: k.Clock.Now(), Who: who, Depth: depth, Undone: []RolledBack{}}
	u, err := k.Undo()
	if err != nil {
		return rb, err
	}
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeAction}, Agent: ev.Agent,
		Until: before.Add(time.Nanosecond), Desc: true, Limit: rollbackScan}) // at or before
	if err != nil {
		return rb, err
	}
	var errs []error
	for _, r := range recs {
		if len(rb.Undone) >= depth {
			break
		}
		if err := ctx.Err(); err != nil {
			return rb, err
		}
		if r.Agent != ev.Agent || r.ActionID == "" {
			continue
		}
		entries, err := u.Entries(ctx, r.ActionID)
		if errors.Is(err, undo.ErrNotFound) {
			continue // nothing was kept: it changed no file
		}
		item := RolledBack{EventID: ev.ID, ActionID: r.ActionID, Tool: r.Tool, At: r.Time.UTC().Format(time.RFC3339Nano), Who: who}
		if err != nil {
			item.Error = err.Error()
			errs = append(errs, err)
			rb.Skipped = append(rb.Skipped, item)
			continue
		}
		if !entries[0].RestoredAt.IsZero() {
			continue // undone before
		}
		var a action.Action
		_ = json.Unmarshal(r.Data, &a)
		item.Kind = string(a.Kind)
		for _, e := range entries {
			item.Paths = append(item.Paths, e.Path)
		}
		if a.Kind == action.KindShell || a.Kind == "" || len(a.Facts.Commands) > 0 {
			item.Reason = "a shell command is never reversed or re-run, only stopped"
			rb.Skipped = append(rb.Skipped, item)
			continue
		}
		restored, rerr := u.Restore(ctx, r.ActionID)
		if errors.Is(rerr, undo.ErrElsewhere) {
			// Another instance of the fleet kept it: its machine's files,
			// which only it restores. Nothing was done here.
			item.Reason = rerr.Error()
			rb.Skipped = append(rb.Skipped, item)
			continue
		}
		for _, e := range restored {
			item.Files += len(e.Files)
		}
		if rerr != nil {
			item.Error = strings.ReplaceAll(rerr.Error(), "\n", "; ")
			errs = append(errs, fmt.Errorf("%s: %w", r.ActionID, rerr))
		}
		if _, err := k.Audit.Append(ctx, audit.Entry{Type: TypeRolledBack, ActionID: r.ActionID, Agent: ev.Agent,
			Session: r.Session, Tool: r.Tool, Data: item}); err != nil {
			errs = append(errs, fmt.Errorf("recording the rollback of %s: %w", r.ActionID, err))
		}
		rb.Undone = append(rb.Undone, item)
	}
	return rb, errors.Join(errs...)
}
