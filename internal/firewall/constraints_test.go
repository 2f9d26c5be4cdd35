package firewall_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/perception"
	"github.com/overseer-dev/overseer/plugin"
)

func TestConstraints(t *testing.T) {
	tests := []struct {
		name    string
		steps   []plugin.StepRecord
		stats   []perception.ToolStats
		want    []string // substrings, one constraint each, in order
		wantLen int
	}{
		{name: "nothing learnt", steps: []plugin.StepRecord{{N: 1, Tool: "bash", Outcome: plugin.OutcomeRan, Class: "success"}}, wantLen: 0},
		{
			name:  "block",
			steps: []plugin.StepRecord{{N: 2, Tool: "bash", Args: map[string]any{"command": "rm -rf /"}, Outcome: plugin.OutcomeBlocked, Note: "block (guard shell): deletes /"}},
			want:  []string{"Step 2: the firewall blocked bash", "Do not retry it in any other form"}, wantLen: 1,
		},
		{
			name:  "person refused with words",
			steps: []plugin.StepRecord{{N: 3, Tool: "file_write", Outcome: plugin.OutcomeDenied, Human: "not in that directory"}},
			want:  []string{"person refused file_write", `"not in that directory"`}, wantLen: 1,
		},
		{
			name: "repeated failures",
			steps: []plugin.StepRecord{
				{N: 1, Tool: "bash", Outcome: plugin.OutcomeRan, IsError: true, Output: "exit 1: no such file"},
				{N: 2, Tool: "bash", Outcome: plugin.OutcomeRan, IsError: true, Output: "exit 1: still no such file"},
			},
			want: []string{"bash failed 2 times in a row (last error: exit 1: still no such file)"}, wantLen: 1,
		},
		{
			name: "a success resets failures",
			steps: []plugin.StepRecord{
				{N: 1, Tool: "bash", Outcome: plugin.OutcomeRan, IsError: true},
				{N: 2, Tool: "bash", Outcome: plugin.OutcomeRan, Class: "success"},
				{N: 3, Tool: "bash", Outcome: plugin.OutcomeRan, IsError: true},
			},
			wantLen: 0,
		},
		{
			name:  "avoidance from the person's answers",
			stats: []perception.ToolStats{{Tool: "web_fetch", Rejections: 3, ConsecutiveRejections: 3, Answers: 3}},
			want:  []string{"refused web_fetch 3 times in a row: avoid it"}, wantLen: 1,
		},
		{
			name:  "mostly refused",
			stats: []perception.ToolStats{{Tool: "sql_exec", Rejections: 3, Approvals: 2, Answers: 5, ConsecutiveRejections: 0}},
			want:  []string{"refuses sql_exec more often than not (3 of 5"}, wantLen: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := firewall.Constraints(tt.steps, tt.stats, 3)
			if len(got) != tt.wantLen {
				t.Fatalf("got %d constraints, want %d: %q", len(got), tt.wantLen, got)
			}
			all := strings.Join(got, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("constraints %q lack %q", got, w)
				}
			}
		})
	}
}

func TestConstraintsAreBounded(t *testing.T) {
	var steps []plugin.StepRecord
	for i := 1; i <= 40; i++ {
		steps = append(steps, plugin.StepRecord{N: i, Tool: "bash", Args: map[string]any{"n": i}, Outcome: plugin.OutcomeBlocked})
	}
	got := firewall.Constraints(steps, nil, 3)
	if len(got) != 12 || !strings.Contains(got[len(got)-1], "Step 40") {
		t.Fatalf("want the 12 newest constraints, got %d ending %q", len(got), got[len(got)-1])
	}
}

func TestDeviation(t *testing.T) {
	if f := firewall.Deviation(4, "read the config file", "irrelevant"); !strings.Contains(f, "step 4 does not match") {
		t.Fatalf("irrelevant result not flagged: %q", f)
	}
	for _, class := range []string{"success", "failure", "partial"} {
		if f := firewall.Deviation(4, "read the config", class); f != "" {
			t.Errorf("%s flagged: %q", class, f)
		}
	}
	if f := firewall.Deviation(4, "", "irrelevant"); f != "" {
		t.Errorf("no intent but flagged: %q", f)
	}
}

func TestAgentAskedAndStagnation(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	bus := perception.New(st, clk)
	e := newEngine(t, firewall.Config{Signals: bus, Clock: clk})
	read := func() *action.Action { return act("Read", map[string]any{"file_path": "main.go"}) }
	if v := e.Evaluate(ctx, read()); v.Level != action.Auto {
		t.Fatalf("plain read: %s", v.Summary())
	}
	a := read()
	a.HumanRequested = true
	if v := e.Evaluate(ctx, a); v.Level != action.Confirm || v.Decider.Name != "agent-asked" {
		t.Fatalf("agent asked for a person: %s", v.Summary())
	}
	// Without signals too: the request only ever raises.
	e2 := newEngine(t, firewall.Config{})
	if v := e2.Evaluate(ctx, a); v.Level != action.Confirm {
		t.Fatalf("agent asked, no signals: %s", v.Summary())
	}
	key := firewall.SessionKey(read())
	for i := 0; i < 2; i++ {
		bus.RecordStagnation(key, "same result")
	}
	if v := e.Evaluate(ctx, read()); v.Level != action.Auto {
		t.Fatalf("two no-progress notes already ask: %s", v.Summary())
	}
	bus.RecordStagnation(key, "same result")
	// At the threshold the agent is told to switch strategy first
	// (kernel.NoteStagnation); the call is not put to a person yet.
	if v := e.Evaluate(ctx, read()); v.Level != action.Auto {
		t.Fatalf("three no-progress notes already ask: %s", v.Summary())
	}
	bus.RecordStagnation(key, "same result after the switch")
	v := e.Evaluate(ctx, read())
	if v.Level != action.Confirm || v.Decider.Name != "stagnation" || !strings.Contains(v.Summary(), "strategy switch did not help") {
		t.Fatalf("stagnation after the strategy switch: %s", v.Summary())
	}
	bus.ClearStagnation(key)
	if v := e.Evaluate(ctx, read()); v.Level != action.Auto {
		t.Fatalf("after a person looked: %s", v.Summary())
	}
}
