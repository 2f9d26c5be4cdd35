package kernel

import (
	"context"
	"fmt"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/policy"
)

// Explanation says which rule decided an action and why: the verdict, and
// the trace of each policy layer read top to bottom.
type Explanation struct {
	Action    action.Action  `json:"action"`
	Verdict   action.Verdict `json:"verdict"`
	Admin     []PolicyStep   `json:"admin"`
	User      []PolicyStep   `json:"user"`
	Default   action.Level   `json:"default"`
	UserError string         `json:"user_error,omitempty"`
}

// PolicyStep is one rule looked at while explaining.
type PolicyStep struct {
	Rule    string       `json:"rule"`
	Layer   string       `json:"layer"`
	Level   action.Level `json:"level"`
	Matched bool         `json:"matched"`
	Why     string       `json:"why"`
}

// Explain evaluates an action without recording it and traces the policy.
func (k *Kernel) Explain(ctx context.Context, a *action.Action) Explanation {
	v := k.Evaluate(ctx, a)
	ex := Explanation{Action: *a, Verdict: v, Default: k.Engine.Policy().Default(a.Kind)}
	ex.Admin = policyTrace(k.Engine.Policy().Rules, a)
	ex.User = policyTrace(k.Engine.UserRules(), a)
	return ex
}

// Result is what an allowed action did, reported after it ran.
type Result struct {
	ActionID string `json:"action_id"`
	Agent    string `json:"agent,omitempty"`
	Session  string `json:"session,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Output   string `json:"output"`
	IsError  bool   `json:"is_error,omitempty"`
	Intent   string `json:"intent,omitempty"`
}

// ResultRecord is the audit record of a result and its classification.
type ResultRecord struct {
	Result
	Class    string `json:"class"`
	Repeated bool   `json:"repeated,omitempty"`
}

// maxResultAudit caps the output kept in the audit log.
const maxResultAudit = 64 << 10

// RecordResult writes an execution result to the audit log and feeds the
// PerceptionBus. Output beyond 64 KiB is truncated in the record.
func (k *Kernel) RecordResult(ctx context.Context, r Result) (ResultRecord, error) {
	a := &action.Action{Agent: r.Agent, Session: r.Session, Tool: r.Tool}
	info := k.Bus.RecordResult(firewall.SessionKey(a), r.Tool, r.Output, r.IsError, r.Intent)
	rec := ResultRecord{Result: r, Class: info.Class.String(), Repeated: info.Repeated}
	if len(rec.Output) > maxResultAudit {
		rec.Output = rec.Output[:maxResultAudit] + fmt.Sprintf("\n… (%d bytes truncated)", len(r.Output)-maxResultAudit)
	}
	_, err := k.Audit.Append(ctx, audit.Entry{Type: audit.TypeResult, ActionID: r.ActionID, Agent: r.Agent,
		Session: r.Session, Tool: r.Tool, Data: rec})
	return rec, err
}

func policyTrace(rules []*policy.Compiled, a *action.Action) []PolicyStep {
	var out []PolicyStep
	for _, st := range policy.Trace(rules, a) {
		ps := PolicyStep{Rule: st.Rule.Name, Layer: st.Rule.Layer, Level: st.Rule.Level, Matched: st.Matched, Why: st.Detail}
		if st.Err != nil {
			ps.Why = "error: " + st.Err.Error()
		}
		out = append(out, ps)
	}
	return out
}
