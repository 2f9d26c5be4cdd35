package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/guard/resultscan"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
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
	// ClientID names the action by the caller's correlation id when the
	// caller does not know Overseer's id (a hook's post event): the latest
	// action of the same agent and session with that client_id.
	ClientID string `json:"client_id,omitempty"`
	Agent    string `json:"agent,omitempty"`
	Session  string `json:"session,omitempty"`
	Tool     string `json:"tool,omitempty"`
	Output   string `json:"output"`
	IsError  bool   `json:"is_error,omitempty"`
	Intent   string `json:"intent,omitempty"`
	// Args are the call's arguments, when the caller has them: an intent
	// word they name counts as the result's relevance (not recorded here;
	// the action's record holds them).
	Args map[string]any `json:"-"`
	// Scan is the scan of Output the caller already made (ScanResult);
	// nil: RecordResult scans it.
	Scan *resultscan.Report `json:"-"`
	// Facts are the facts of the action ActionID as this process's kernel
	// derived them, when the caller holds the action it submitted (the MCP
	// gateway): the paths it wrote are then not read back from its record.
	// Never taken from a request.
	Facts *action.Facts `json:"-"`
	// Lazy lets the result's records wait, briefly, to share the commit
	// of the next durable record (see audit.Log.AppendLazy): for a caller
	// that already answered the call and records what it returned off
	// that path (the MCP gateway). Never taken from a request.
	Lazy bool `json:"-"`
}

// ResultRecord is the audit record of a result and its classification.
type ResultRecord struct {
	Result
	Class    string `json:"class"`
	Repeated bool   `json:"repeated,omitempty"`
	// Findings are what the scan of the output found (prompt injection,
	// secrets); nil when nothing was.
	Findings *resultscan.Report `json:"findings,omitempty"`
}

// Alert is the data of an audit record of type alert.
type Alert struct {
	Kind    string `json:"kind"` // result, mcp_definition
	Summary string `json:"summary"`
	// What the alert is about: the action whose result it is, or the MCP
	// server and tool.
	ActionID string             `json:"action_id,omitempty"`
	Server   string             `json:"server,omitempty"`
	Tool     string             `json:"tool,omitempty"`
	Findings *resultscan.Report `json:"findings,omitempty"`
	Detail   any                `json:"detail,omitempty"`
}

// ScanResult scans a tool's output for prompt injection and secrets.
func (k *Kernel) ScanResult(output string) resultscan.Report {
	return k.Results.Scan(output)
}

// maxResultAudit caps the output kept in the audit log.
const maxResultAudit = 64 << 10

// RecordResult writes an execution result to the audit log and feeds the
// PerceptionBus. Output beyond 64 KiB is truncated in the record.
func (k *Kernel) RecordResult(ctx context.Context, r Result) (ResultRecord, error) {
	if r.ActionID == "" && r.ClientID != "" {
		r.ActionID = k.ActionByClientID(ctx, r.Agent, r.Session, r.ClientID)
	}
	a := &action.Action{Agent: r.Agent, Session: r.Session, Tool: r.Tool}
	call := ""
	if r.Intent != "" { // without an intent, relevance is not judged: no need to walk the arguments
		call = argValues(r.Args)
	}
	info := k.Bus.RecordResult(firewall.SessionKey(a), r.Tool, r.Output, r.IsError, r.Intent, call)
	if key, hash, ok := k.calls.get(r.ActionID); ok && key == firewall.SessionKey(a) {
		// L2 reads whether the call's result changed since its last run.
		k.Bus.RecordCallResult(key, hash, r.Output)
	}
	rec := ResultRecord{Result: r, Class: info.Class.String(), Repeated: info.Repeated}
	scan := r.Scan
	if scan == nil {
		s := k.ScanResult(r.Output)
		scan = &s
	}
	if scan.Hit() {
		rec.Findings = scan
		if len(scan.Secrets) > 0 {
			// The audit log keeps the masked output, never the secret.
			rec.Output = resultscan.Mask(rec.Output, scan.Secrets)
		}
	}
	if len(rec.Output) > maxResultAudit {
		rec.Output = rec.Output[:maxResultAudit] + fmt.Sprintf("\n… (%d bytes truncated)", len(r.Output)-maxResultAudit)
	}
	entries := []audit.Entry{{Type: audit.TypeResult, ActionID: r.ActionID, Agent: r.Agent,
		Session: r.Session, Tool: r.Tool, Data: rec}}
	if scan.Hit() {
		entries = append(entries, audit.Entry{Type: audit.TypeAlert, ActionID: r.ActionID, Agent: r.Agent,
			Session: r.Session, Tool: r.Tool, Data: Alert{Kind: "result", Summary: "tool result: " + scan.Summary(),
				ActionID: r.ActionID, Tool: r.Tool, Findings: scan}})
	}
	appendAll := k.Audit.AppendAll
	if r.Lazy {
		appendAll = k.Audit.AppendLazy
	}
	_, err := appendAll(ctx, entries...)
	k.recordWrites(ctx, r)
	return rec, err
}

// argValues joins the string and number values of a call's arguments, at
// any depth, one a line: what the call names, without the argument names.
func argValues(args map[string]any) string {
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v)
			b.WriteByte('\n')
		case float64:
			fmt.Fprintln(&b, v)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(args)
	return b.String()
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

// ActionByClientID returns the id of the latest action of agent and
// session that its caller named clientID, or "" when there is none. A
// client id is a correlation, not a key: it only finds the caller's own
// latest call.
func (k *Kernel) ActionByClientID(ctx context.Context, agent, session, clientID string) string {
	if clientID == "" {
		return ""
	}
	needle, err := json.Marshal(clientID)
	if err != nil {
		return ""
	}
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeAction}, Agent: agent, Session: session,
		Text: `"client_id":` + string(needle), Desc: true, Limit: 1})
	if err != nil || len(recs) == 0 {
		return ""
	}
	return recs[0].ActionID
}
