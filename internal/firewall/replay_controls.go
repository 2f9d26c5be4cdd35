package firewall

import (
	"context"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/autorule"
)

// ControlCase is one past call in the dry run of auto-rules or anomaly
// rules: what the rules would have done to it.
type ControlCase struct {
	Seq      int64     `json:"seq"`
	ActionID string    `json:"action_id"`
	Time     time.Time `json:"time"`
	Agent    string    `json:"agent,omitempty"`
	Tool     string    `json:"tool"`
	Summary  string    `json:"summary"`
	// Then is the level recorded when the call was judged; Without and
	// With are its level now, without and with the rules.
	Then    action.Level `json:"then"`
	Without action.Level `json:"without"`
	With    action.Level `json:"with"`
	// Fired are the rules' findings on the call.
	Fired []autorule.Finding `json:"fired,omitempty"`
	// Paused is set when an earlier firing in the dry run had paused the
	// agent: the call would have been refused.
	Paused bool `json:"paused,omitempty"`
}

// ControlReplay is the dry run of auto-rules or anomaly rules over past
// calls, call by call.
type ControlReplay struct {
	Examined int       `json:"examined"`
	Since    time.Time `json:"since,omitzero"`
	// Fired counts the calls a rule fired on; Changed those whose level
	// the rules change; Blocked, Asked and Loosened those the rules would
	// have blocked, put to a person, or let through with less; Paused the
	// calls refused because the agent was paused.
	Fired    int `json:"fired"`
	Changed  int `json:"changed"`
	Blocked  int `json:"blocked"`
	Asked    int `json:"asked"`
	Loosened int `json:"loosened"`
	Paused   int `json:"paused"`
	// Cases are the calls the rules fired on or changed, oldest first.
	Cases []ControlCase `json:"cases"`
}

// fixedClock is the time of a past call, for a dry run.
type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }
func (c fixedClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- time.Time(c)
	return ch
}

// replaySetControls checks a set against counters and holds the dry run
// builds as it goes.
type replaySetControls struct {
	set      *autorule.Set
	counters *autorule.Counters
	spend    autorule.Spend
	holds    *autorule.Holds
}

func (c replaySetControls) Check(a *action.Action, now time.Time) ([]autorule.Finding, error) {
	return c.set.Check(a, autorule.Env{Now: now, Counters: c.counters, Spend: c.spend, Holds: c.holds}), nil
}

// ReplayControls is the dry run of auto-rules or anomaly rules (set) over
// past calls, oldest first: each call is judged again by the engine as it
// is now without the rules and with them, at the time it was made (time
// windows), with counts rebuilt from the calls and results before it
// (an anomaly's baseline is not asked for: the threshold alone decides)
// and the spend as spend recorded it up to the call (nil: cost triggers
// do not fire).
// Holds and pauses carry over to later calls. It changes nothing. It
// shares the learned-trust dry run's history and replay engine (Replay).
func (e *Engine) ReplayControls(ctx context.Context, set *autorule.Set, past []PastAction, spend autorule.Spend) (*ControlReplay, error) {
	rep := &ControlReplay{Cases: []ControlCase{}}
	counters := autorule.NewCounters(max(set.MaxWindow(), time.Hour))
	holds := autorule.NewHolds()
	paused := map[string]bool{}
	without := e.replayEngine(nil)
	for j := range past {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := &past[j]
		if j == 0 || p.Time.Before(rep.Since) {
			rep.Since = p.Time
		}
		a := &p.Action
		vWo := without.Evaluate(ctx, replayCopy(a))
		with := e.replayEngine(nil)
		with.clock = fixedClock(p.Time)
		with.controls = replaySetControls{set: set, counters: counters, spend: spend, holds: holds}
		vWi, fs := with.EvaluateControls(ctx, replayCopy(a))
		c := ControlCase{Seq: p.Seq, ActionID: a.ID, Time: p.Time, Agent: a.Agent, Tool: a.Tool,
			Summary: CallSummary(a, 160), Then: p.Verdict.Level, Without: vWo.Level, With: vWi.Level, Fired: fs}
		if paused[a.Agent] {
			c.Paused, c.With = true, action.Block
		}
		for _, f := range fs {
			if !f.HoldUntil.IsZero() {
				holds.Set(f.RuleID, a.Agent, f.HoldUntil)
			}
			if f.Stop {
				paused[a.Agent] = true
			}
		}
		counters.Add(p.Time, autorule.Sample{At: p.Time, Agent: a.Agent, Tool: a.Tool, Kind: string(a.Kind), Call: true})
		if p.Result != "" {
			counters.Add(p.Time, autorule.Sample{At: p.Time, Agent: a.Agent, Tool: a.Tool, Kind: string(a.Kind), Result: true, Failed: p.Result == ResultError})
		}
		rep.Examined++
		if len(fs) == 0 && !c.Paused && c.With == c.Without {
			continue
		}
		if len(fs) > 0 {
			rep.Fired++
		}
		if c.Paused {
			rep.Paused++
		}
		if c.With != c.Without {
			rep.Changed++
			switch {
			case c.With == action.Block:
				rep.Blocked++
			case c.With.NeedsPerson() && !c.Without.NeedsPerson():
				rep.Asked++
			case c.With < c.Without:
				rep.Loosened++
			}
		}
		rep.Cases = append(rep.Cases, c)
	}
	return rep, nil
}
