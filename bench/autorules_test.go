package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/usage"
)

// benchAutoRules is the kernel's view of the auto-rules (kernel/controls.go)
// without a store: the compiled set, counters, the spend and holds in
// memory.
type benchAutoRules struct {
	set      *autorule.Set
	counters *autorule.Counters
	spend    *usage.Counter
	holds    *autorule.Holds
}

func (c *benchAutoRules) Check(a *action.Action, now time.Time) ([]autorule.Finding, error) {
	return c.set.Check(a, autorule.Env{Now: now, Counters: c.counters, Spend: c.spend, Holds: c.holds}), nil
}

// fiftyAutoRules are 50 auto-rules of every trigger type over a spread of
// tools and kinds, and 10 anomaly rules, none of which fires on the bench
// case (a quiet afternoon), so that every rule that can match is checked.
func fiftyAutoRules(tb testing.TB) ([]autorule.Rule, []autorule.AnomalyRule) {
	tools := []string{"shell", "Bash", "file_write", "Write", "file_edit", "net_fetch", "sql", "mcp__github__*", "file_delete", ""}
	var rules []autorule.Rule
	for i := range 50 {
		tool := tools[i%len(tools)]
		r := autorule.Rule{ID: fmt.Sprintf("ar%02d", i), Name: fmt.Sprintf("rule %d", i), Priority: i, Enabled: true}
		switch i % 5 {
		case 0:
			r.Trigger = autorule.Trigger{Type: autorule.TriggerTime, Tool: tool, From: "22:00", To: "06:00", TZ: "Europe/Berlin"}
			r.Action = autorule.Action{Type: autorule.ActBlockTool}
		case 1:
			r.Trigger = autorule.Trigger{Type: autorule.TriggerPattern, Tool: tool, Text: fmt.Sprintf("production-%d", i)}
			r.Action = autorule.Action{Type: autorule.ActRequireApproval}
		case 2:
			r.Trigger = autorule.Trigger{Type: autorule.TriggerCount, Tool: tool, Count: 500, WindowMinutes: 10}
			r.Action = autorule.Action{Type: autorule.ActBlockTool, DurationMinutes: 60}
		case 3:
			r.Trigger = autorule.Trigger{Type: autorule.TriggerErrors, Tool: tool, Percent: 90, MinCalls: 20, WindowMinutes: 30}
			r.Action = autorule.Action{Type: autorule.ActPauseAgent}
		case 4:
			r.Trigger = autorule.Trigger{Type: autorule.TriggerCost, Tool: tool, USD: 50, WindowMinutes: 1440}
			r.Action = autorule.Action{Type: autorule.ActNotify}
		}
		if err := r.Validate(); err != nil {
			tb.Fatalf("rule %d: %v", i, err)
		}
		rules = append(rules, r)
	}
	var anomalies []autorule.AnomalyRule
	for i := range 10 {
		anomalies = append(anomalies, autorule.AnomalyRule{ID: fmt.Sprintf("an%02d", i), Name: fmt.Sprintf("anomaly %d", i),
			Tool: tools[i%len(tools)], ThresholdCount: 200, WindowSeconds: 300, Action: autorule.AnomalyStopRollback, Enabled: true})
	}
	return rules, anomalies
}

// BenchmarkEvaluateAutoRules measures Evaluate of the 100-rule policy's
// bench case with the default guards, without and with 50 auto-rules and
// 10 anomaly rules, counters holding 150 calls and results of the agent
// in the last five minutes and the budget store a day of its spend to the
// minute (below every threshold): the controls may add at most 10 µs to
// the median.
func BenchmarkEvaluateAutoRules(b *testing.B) {
	rs, p := loadPolicy(b)
	c, ok := rs.Case(rs.Bench)
	if !ok {
		b.Fatalf("no bench case %q", rs.Bench)
	}
	tmpl := caseAction(b, c)
	ctx := context.Background()
	rules, anomalies := fiftyAutoRules(b)
	set, err := autorule.Compile(rules, anomalies)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	counters := autorule.NewCounters(24 * time.Hour)
	for i := range 150 {
		at := now.Add(-time.Duration(300-2*i) * time.Second)
		counters.Add(now, autorule.Sample{Seq: int64(2*i + 1), At: at, Agent: tmpl.Agent, Tool: "Bash", Kind: "shell", Call: true},
			autorule.Sample{Seq: int64(2*i + 2), At: at, Agent: tmpl.Agent, Tool: "Bash", Kind: "shell", Result: true, Failed: i%7 == 0})
	}
	var costs []usage.CostSample
	for i := range 24 * 60 {
		costs = append(costs, usage.CostSample{T: now.Add(-time.Duration(i) * time.Minute).UnixNano(), USD: 0.01})
	}
	_, buckets, err := usage.MergeCosts(nil, costs, now)
	if err != nil {
		b.Fatal(err)
	}
	spend := usage.NewCounter(nil)
	spend.PutCosts(tmpl.Agent, buckets)
	ctl := &benchAutoRules{set: set, counters: counters, spend: spend, holds: autorule.NewHolds()}
	// A quiet afternoon in Berlin: no time rule fires.
	for _, with := range []bool{false, true} {
		name := "without-controls"
		cfg := firewall.Config{Policy: p}
		if with {
			name, cfg.Controls = "with-controls", ctl
		}
		b.Run(name, func(b *testing.B) {
			eng, err := firewall.New(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			v := benchEvaluate(b, eng, tmpl)
			checkDecision(b, c, v)
		})
	}
}
