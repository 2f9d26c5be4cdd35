package autorule

import (
	"fmt"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/usage"
)

// BenchmarkCheck50 is Set.Check with 50 auto-rules of every trigger type
// and 10 anomaly rules, none firing, counters holding 150 calls and
// results of the agent in the last five minutes and the budget store a
// day of its spend, to the minute (the cost triggers' 24-hour windows sum
// all of it).
func BenchmarkCheck50(b *testing.B) {
	tools := []string{"shell", "Bash", "file_write", "Write", "file_edit", "net_fetch", "sql", "mcp__github__*", "file_delete", ""}
	var rules []Rule
	for i := range 50 {
		tool := tools[i%len(tools)]
		r := Rule{ID: fmt.Sprintf("ar%02d", i), Name: fmt.Sprintf("rule %d", i), Priority: i, Enabled: true}
		switch i % 5 {
		case 0:
			r.Trigger, r.Action = Trigger{Type: TriggerTime, Tool: tool, From: "22:00", To: "06:00", TZ: "Europe/Berlin"}, Action{Type: ActBlockTool}
		case 1:
			r.Trigger, r.Action = Trigger{Type: TriggerPattern, Tool: tool, Text: fmt.Sprintf("production-%d", i)}, Action{Type: ActRequireApproval}
		case 2:
			r.Trigger, r.Action = Trigger{Type: TriggerCount, Tool: tool, Count: 500, WindowMinutes: 10}, Action{Type: ActBlockTool, DurationMinutes: 60}
		case 3:
			r.Trigger, r.Action = Trigger{Type: TriggerErrors, Tool: tool, Percent: 90, MinCalls: 20, WindowMinutes: 30}, Action{Type: ActPauseAgent}
		case 4:
			r.Trigger, r.Action = Trigger{Type: TriggerCost, Tool: tool, USD: 50, WindowMinutes: 1440}, Action{Type: ActNotify}
		}
		rules = append(rules, r)
	}
	var anomalies []AnomalyRule
	for i := range 10 {
		anomalies = append(anomalies, AnomalyRule{ID: fmt.Sprintf("an%02d", i), Name: "a", Tool: tools[i%len(tools)],
			ThresholdCount: 200, WindowSeconds: 300, Action: AnomalyStopRollback, Enabled: true})
	}
	set, err := Compile(rules, anomalies)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	c := NewCounters(24 * time.Hour)
	for i := range 150 {
		at := now.Add(-time.Duration(300-2*i) * time.Second)
		c.Add(now, Sample{Seq: int64(2*i + 1), At: at, Agent: "a", Tool: "Bash", Kind: "shell", Call: true},
			Sample{Seq: int64(2*i + 2), At: at, Agent: "a", Tool: "Bash", Kind: "shell", Result: true, Failed: i%7 == 0})
	}
	var fresh []usage.CostSample
	for i := range 24 * 60 {
		fresh = append(fresh, usage.CostSample{T: now.Add(-time.Duration(i) * time.Minute).UnixNano(), USD: 0.01})
	}
	_, bs, err := usage.MergeCosts(nil, fresh, now)
	if err != nil {
		b.Fatal(err)
	}
	spend := usage.NewCounter(nil)
	spend.PutCosts("a", bs)
	a := &action.Action{Agent: "a", Tool: "Bash", Kind: action.KindShell, Args: map[string]any{"command": "git status"}}
	// Side by side in one run: without the spend record the cost triggers
	// are skipped; with it each sums a day of spend.
	for _, v := range []struct {
		name  string
		spend Spend
	}{{"no-spend", nil}, {"day-of-spend", spend}} {
		b.Run(v.name, func(b *testing.B) {
			env := Env{Now: now, Counters: c, Spend: v.spend, Holds: NewHolds()}
			b.ReportAllocs()
			for b.Loop() {
				if fs := set.Check(a, env); len(fs) != 0 {
					b.Fatalf("fired: %+v", fs)
				}
			}
		})
	}
}
