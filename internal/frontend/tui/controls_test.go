package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/usage"
)

// TestControlsViews: the auto-rules, anomaly and limits views over a real
// daemon. An auto-rule that fired shows its count, last firing and log,
// and E turns it off through the API (audited as the person); an anomaly
// shows in the timeline with its rule; a rate limit and a budget cap show
// their use against the limit, the cap past its 80% mark.
func TestControlsViews(t *testing.T) {
	d := newDaemon(t)
	ctx := context.Background()
	rule, err := d.k.PutAutoRule(ctx, autorule.Rule{Name: "prod needs eyes", Enabled: true, Priority: 5,
		Trigger: autorule.Trigger{Type: autorule.TriggerPattern, Tool: "deploy", Text: "prod"},
		Action:  autorule.Action{Type: autorule.ActRequireApproval}}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	anomaly, err := d.k.PutAnomalyRule(ctx, autorule.AnomalyRule{Name: "deploy storm", Tool: "deploy", ThresholdCount: 3,
		WindowSeconds: 600, Action: "stop", Enabled: true}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.k.PutRateLimit(ctx, usage.RateLimit{Name: "few deploys", Agent: "codex", Tool: "deploy", MaxCalls: 5,
		WindowSeconds: 3600, Action: usage.Block, Enabled: true}, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.k.PutBudgetCap(ctx, usage.BudgetCap{Name: "daily", Scope: usage.ScopeGlobal, MaxCostUSD: 1, Period: usage.Daily,
		Action: usage.Stop, Enabled: true}, "alice"); err != nil {
		t.Fatal(err)
	}
	d.k.RecordUse(ctx, kernel.Use{Agent: "codex", Session: "s-9", Model: "m", CostUSD: 0.85})
	for _, target := range []string{"prod", "staging", "qa"} {
		if _, err := d.k.Submit(ctx, &action.Action{Tool: "deploy", Agent: "codex", Session: "s-9", Args: map[string]any{"target": target}}); err != nil {
			t.Fatal(err)
		}
	}
	m := newModel(t, d)

	m = run(t, m, key("R"))
	s := screen(m)
	for _, want := range []string{"Auto-rules", "● prod needs eyes", "pattern_match → require_approval", "fired 1×",
		rule.ID + `: deploy args contain "prod"`, "codex deploy → approve", "E turn the rule on/off"} {
		if !strings.Contains(s, want) {
			t.Fatalf("auto-rules view lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "last never") {
		t.Fatalf("the last firing is not shown:\n%s", s)
	}
	if testing.Verbose() {
		t.Log("\n" + s)
	}
	m = run(t, m, key("E"))
	if s := screen(m); !strings.Contains(s, "○ prod needs eyes") || !strings.Contains(s, "auto-rule "+rule.ID+": off (audited)") {
		t.Fatalf("after E:\n%s", s)
	}
	if r, err := d.k.AutoRule(ctx, rule.ID); err != nil || r.Enabled || r.TimesTriggered != 1 {
		t.Fatalf("the rule after E: %+v %v", r, err)
	}
	recs, err := d.k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{kernel.TypeAutoRuleChange}})
	if err != nil || len(recs) != 2 || !strings.Contains(string(recs[1].Data), `"who":"ann"`) {
		t.Fatalf("audit of the change %+v %v", recs, err)
	}
	m = run(t, m, key("esc"))

	m = run(t, m, key("n"))
	s = screen(m)
	for _, want := range []string{"● deploy storm  deploy: 3 in 600s → stop", anomaly.ID, "Anomalies, newest first",
		"deploy storm · codex · deploy · 3 in 600s", "stopped, paused"} {
		if !strings.Contains(s, want) {
			t.Fatalf("anomaly view lacks %q:\n%s", want, s)
		}
	}
	if testing.Verbose() {
		t.Log("\n" + s)
	}
	m = run(t, m, key("E"))
	if r, err := d.k.AnomalyRule(ctx, anomaly.ID); err != nil || r.Enabled {
		t.Fatalf("the anomaly rule after E: %+v %v", r, err)
	}
	m = run(t, m, key("n"))

	m = run(t, m, key("l"))
	s = screen(m)
	for _, want := range []string{"Rate limits", "few deploys  codex · deploy: at most 5 in 1h0m0s → block", "3/5",
		"Budget caps", "daily  global, daily: $1.00 → stop", "$0.85 of $1.00", "≥80%"} {
		if !strings.Contains(s, want) {
			t.Fatalf("limits view lacks %q:\n%s", want, s)
		}
	}
	if testing.Verbose() {
		t.Log("\n" + s)
	}
	m = run(t, m, key("q"))
	if !m.quitting {
		t.Fatal("q did not quit")
	}
}
