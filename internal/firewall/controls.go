package firewall

import (
	"context"
	"fmt"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/autorule"
)

// Controls are the hybrid controls of unattended hours: the auto-rules and
// anomaly rules that fire on a call (package autorule). Check reads memory
// only (compiled rules, counters fed from the audit trail): it runs on
// every evaluation. An error means the rules could not be loaded: the
// call is put to a person.
type Controls interface {
	Check(a *action.Action, now time.Time) ([]autorule.Finding, error)
}

// Reason names of the controls' findings.
const (
	AutoRulePrefix = "auto-rule:"
	AnomalyPrefix  = "anomaly:"
)

// controls applies the auto-rules and anomaly rules after the policy
// layers. Tightening findings raise the level (block_tool, pause_agent and
// a stopping anomaly block and ask the agent to stop; require_approval
// asks a person; notify tells one). A loosening finding (auto_approve,
// downgrade_risk) is a user-layer decision: the first one by priority
// applies only where no stored user rule decided and the policy is not
// locked, never below an admin rule's level, and the hard floors and the
// other layers' raises still apply on top of it.
func (ev *evaluation) controls() {
	c := ev.e.controls
	if c == nil {
		return
	}
	fs, err := c.Check(ev.a, ev.e.clock.Now())
	if err != nil {
		ev.fail("L3", "the auto-rules", err)
		return
	}
	ev.findings = fs
	// The loosening finding first (the first by priority), then every
	// tightening one on top of it: a rule that asks for more is never
	// undone by one that asks for less, whatever their priorities.
	for _, f := range fs {
		if !f.Loosens {
			continue
		}
		if ev.user == nil && !ev.snap.admin.Locked {
			ev.loosen(f)
		}
		break
	}
	for _, f := range fs {
		if f.Loosens {
			continue
		}
		r := controlReason(f)
		if f.Stop {
			ev.stop = true
		}
		ev.add(r)
		// Tightening auto-rules are policy (L3): they raise the policy's
		// decision; anomalies (L2) raise the level as every other layer.
		if r.Layer == "L3" {
			ev.base = action.Max(ev.base, r.Level)
		}
	}
}

// controlReason is the verdict's reason for a finding.
func controlReason(f autorule.Finding) action.Reason {
	r := action.Reason{Layer: "L3", Source: action.SourceAutoRule, Name: AutoRulePrefix + f.RuleID,
		PolicyLayer: "user", Level: f.Level, Message: f.Message}
	if f.Anomaly {
		r.Layer, r.Source, r.Name, r.PolicyLayer = "L2", action.SourceAnomaly, AnomalyPrefix+f.RuleID, ""
	}
	return r
}

// loosen applies a loosening finding as a user-layer decision: never below
// an admin rule's level (the hard floors apply in level()).
func (ev *evaluation) loosen(f autorule.Finding) {
	target := f.Level
	if f.Action == autorule.ActDowngradeRisk {
		target = stepDown(ev.base)
	}
	if ev.admin != nil {
		target = action.Max(target, ev.admin.Level)
	}
	if !target.Valid() || target >= ev.base {
		return
	}
	r := controlReason(f)
	r.Level = target
	r.Message += fmt.Sprintf(" (the policy said %s)", ev.base)
	ev.add(r)
	ev.base = target
}

// stepDown is the level one step less strict (block stays block: a block
// is never downgraded).
func stepDown(l action.Level) action.Level {
	switch l {
	case action.Approve:
		return action.Confirm
	case action.Confirm:
		return action.Notify
	case action.Notify:
		return action.Auto
	}
	return l
}

// EvaluateControls is Evaluate that also returns the findings of the
// hybrid controls, for the kernel to carry out what follows a firing once
// the verdict is recorded (holds, pausing the agent, rollback, notices).
func (e *Engine) EvaluateControls(ctx context.Context, a *action.Action) (action.Verdict, []autorule.Finding) {
	var fs []autorule.Finding
	v := e.evaluate(ctx, a, &fs)
	return v, fs
}
