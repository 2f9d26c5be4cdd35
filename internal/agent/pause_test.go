package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/agent"
	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/llmtest"
	"github.com/overseer-dev/overseer/internal/usage"
	"github.com/overseer-dev/overseer/plugin"
	_ "github.com/overseer-dev/overseer/plugins/llm/router"
)

// TestPausedAgentPausesTask: the agent is paused while the model decides;
// its call is refused and the task pauses with a checkpoint. Resumed while
// the agent is still paused, the task pauses again before asking the
// model; once the agent is resumed, the task goes on where it stopped.
func TestPausedAgentPausesTask(t *testing.T) {
	var h *harness
	var requests atomic.Int32
	h = newHarness(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		requests.Add(1)
		switch n {
		case 0:
			return reply("", call("file_read", map[string]any{"file_path": "notes.txt"}, "read the notes", 0.9))
		case 1:
			if err := h.k.PauseAgent(context.Background(), agent.AgentName, "night budget reached", "ann"); err != nil {
				return llmtest.Fail("pause: %v", err)
			}
			return reply("", call("file_read", map[string]any{"file_path": "notes.txt", "offset": 1}, "read again", 0.9))
		}
		return reply("", doneDecision)
	}), nil)
	tk := h.run(t, "read the notes")
	if tk.Status != task.Paused || !strings.Contains(tk.Result, "night budget reached") ||
		!strings.Contains(tk.Result, "overseer resume-agent "+agent.AgentName) || !strings.Contains(tk.Result, "overseer resume "+tk.ID) {
		t.Fatalf("status %s result %q\n%s", tk.Status, tk.Result, h.out)
	}
	if n := len(tk.Steps); n != 2 || tk.Steps[0].Outcome != plugin.OutcomeRan || tk.Steps[1].Outcome != plugin.OutcomeBlocked {
		t.Fatalf("steps %+v\n%s", tk.Steps, h.out)
	}
	saved, err := h.ts.Get(context.Background(), tk.ID)
	if err != nil || saved.Status != task.Paused || saved.Step != 2 {
		t.Fatalf("checkpoint %+v, %v", saved, err)
	}

	// Still paused: no step, no model request.
	before := requests.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	again, err := h.loop.Run(ctx, tk.ID, agent.Options{})
	if err != nil || again.Status != task.Paused || len(again.Steps) != 2 || requests.Load() != before {
		t.Fatalf("resumed while the agent is paused: %v, %+v, %d requests\n%s", err, again, requests.Load()-before, h.out)
	}

	if err := h.k.ResumeAgent(context.Background(), agent.AgentName, "ann"); err != nil {
		t.Fatal(err)
	}
	done, err := h.loop.Run(ctx, tk.ID, agent.Options{})
	if err != nil || done.Status != task.Done || len(done.Steps) != 3 {
		t.Fatalf("after the agent's resume: %v, %s %q\n%s", err, done.Status, done.Result, h.out)
	}
}

func setPrices(t *testing.T, h *harness, p usage.Prices) {
	t.Helper()
	if err := h.k.SetPrices(context.Background(), p, "ann"); err != nil {
		t.Fatal(err)
	}
}

// TestBudgetStopPausesTask: a model call brings the spend to a stop cap;
// the task pauses with its checkpoint before the next model call.
func TestBudgetStopPausesTask(t *testing.T) {
	h := newHarness(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		r := reply("", call("file_read", map[string]any{"file_path": "notes.txt", "offset": n + 1}, "read the notes", 0.9))
		r.Usage = &llmtest.Usage{Input: 1000, Output: 0}
		return r
	}), nil)
	setPrices(t, h, usage.Prices{"m": {InputPerMTok: 1000}}) // $1 a call
	cp, err := h.k.PutBudgetCap(context.Background(), usage.BudgetCap{Scope: usage.ScopeGlobal, MaxCostUSD: 2, Period: usage.Daily,
		Action: usage.Stop, Enabled: true}, "ann")
	if err != nil {
		t.Fatal(err)
	}
	tk := h.run(t, "read the notes")
	if tk.Status != task.Paused || !strings.Contains(tk.Result, "budget cap "+cp.ID) || len(tk.Steps) != 2 {
		t.Fatalf("status %s, %d steps, result %q\n%s", tk.Status, len(tk.Steps), tk.Result, h.out)
	}
	if n := len(h.srv.Requests()); n != 2 {
		t.Fatalf("%d model calls, want 2 (none after the cap)", n)
	}
}

// TestBudgetDowngrade: at a downgrade cap the loop switches the router to
// its cheaper model (the compress route) and goes on there.
func TestBudgetDowngrade(t *testing.T) {
	big := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		r := reply("", call("file_read", map[string]any{"file_path": "notes.txt", "offset": n + 1}, "read the notes", 0.9))
		r.Usage = &llmtest.Usage{Input: 1000}
		return r
	}))
	small := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		return reply("", doneDecision)
	}))
	cfg := fmt.Sprintf(`{"default": {"plugin": "llm.openai", "config": {"model": "big", "base_url": %q}},
		"routes": {"compress": {"plugin": "llm.openai", "config": {"model": "small", "base_url": %q}}}}`, big.URL, small.URL)
	inst, err := plugin.New("llm.router", json.RawMessage(cfg))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessLLM(t, inst.(plugin.LLM), nil)
	setPrices(t, h, usage.Prices{"big": {InputPerMTok: 1000}, "small": {}})
	if _, err := h.k.PutBudgetCap(context.Background(), usage.BudgetCap{Scope: usage.ScopeAgent, ScopeID: agent.AgentName, MaxCostUSD: 1,
		Period: usage.Daily, Action: usage.Downgrade, Enabled: true}, "ann"); err != nil {
		t.Fatal(err)
	}
	tk := h.run(t, "read the notes")
	if tk.Status != task.Done {
		t.Fatalf("status %s %q\n%s", tk.Status, tk.Result, h.out)
	}
	if nb, ns := len(big.Requests()), len(small.Requests()); nb != 1 || ns < 1 {
		t.Fatalf("big answered %d, small %d; want 1 and then the small one\n%s", nb, ns, h.out)
	}
	if !strings.Contains(h.out.String(), "switched to the router's cheaper model") {
		t.Fatalf("no word of the downgrade:\n%s", h.out)
	}
}
