package agent_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/agent"
	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/llmtest"
	"github.com/overseer-dev/overseer/plugin"
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
