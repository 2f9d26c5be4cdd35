package run

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/llmtest"
	"github.com/overseer-dev/overseer/internal/overseertest"
)

// costly is a reply whose usage the test prices.
func costly(r llmtest.Reply) llmtest.Reply {
	r.Usage = &llmtest.Usage{Input: 1000, Output: 0}
	return r
}

// initDB creates the home's database (an evaluation opens it), so that
// limits and caps can be stored before anything ran.
func (e *env) initDB() {
	e.t.Helper()
	if r := overseertest.Run(e.t, e.home, `{"tool": "Read", "args": {"file_path": "notes.txt"}}`, "eval"); r.Code != 0 {
		e.t.Fatalf("overseer eval: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

func (e *env) mustRun(args ...string) string {
	e.t.Helper()
	r := e.run(args...)
	if r.Code != 0 {
		e.t.Fatalf("overseer %v: exit %d\n%s%s", args, r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// TestRateLimitPausesAgentAndTask: the real binary. A rate limit with the
// action pause (set with `overseer limits`) refuses the own loop's second
// read: the agent is paused (`overseer paused` says by which limit) and its
// task pauses with a checkpoint (exit 3). A person resumes the agent and
// raises the limit; the task resumes where it stopped.
func TestRateLimitPausesAgentAndTask(t *testing.T) {
	e := newEnv(t)
	srv := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			return decision("", toolCall("file_read", map[string]any{"file_path": "notes.txt"}, "read the notes"))
		case 1:
			return decision("", toolCall("file_read", map[string]any{"file_path": "notes.txt", "offset": 1}, "read them again"))
		case 2:
			if r, ok := expect(t, n, req, "rate limit"); !ok {
				return r
			}
			return decision("", toolCall("file_read", map[string]any{"file_path": "notes.txt", "offset": 1}, "read them again"))
		case 3:
			return decision("", done("Read the notes"))
		}
		return llmtest.Fail("request %d was not expected", n)
	}))
	e.initDB()
	out := e.mustRun("limits", "add", "--agent", "overseer", "--tool", "file_read", "--max", "1", "--window", "1h", "--action", "pause", "--who", "ann")
	id := strings.TrimSuffix(strings.Fields(out)[2], ":")
	p := e.start("run", "--no-plan", "--model", "openai:test-model@"+srv.URL, "Read the notes twice")
	if code := p.wait(t, 60*time.Second); code != 3 {
		t.Fatalf("exit %d, want 3 (paused):\n%s", code, p.out.String())
	}
	if !strings.Contains(p.out.String(), "rate limit "+id) {
		t.Errorf("the output does not name the limit:\n%s", p.out.String())
	}
	paused := e.mustRun("paused")
	if !strings.Contains(paused, "overseer") || !strings.Contains(paused, "rate-limit "+id) {
		t.Fatalf("overseer paused:\n%s", paused)
	}
	list := e.tasks()
	if len(list) != 1 || list[0].Status != "paused" || len(list[0].Steps) != 2 || list[0].Steps[1].Outcome != "blocked" {
		t.Fatalf("task %+v", list)
	}
	// Resumed while the agent is still paused: the task pauses at once.
	p = e.start("resume", list[0].ID)
	if code := p.wait(t, 60*time.Second); code != 3 || !strings.Contains(p.out.String(), "overseer resume-agent overseer") {
		t.Fatalf("resume under the pause: exit %d\n%s", code, p.out.String())
	}
	e.mustRun("limits", "set", id, "--max", "10")
	e.mustRun("resume-agent", "overseer", "--who", "ann")
	p = e.start("resume", list[0].ID)
	e.answer("approve", e.awaitApproval(p, "overseer.confirm_done"))
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("resume exit %d:\n%s", code, p.out.String())
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("the model was asked %d times, want 4", n)
	}
	e.verifyAudit()
}

// TestBudgetStopAndDowngrade: the real binary. With every model call
// priced at $1, a stop cap of $1.50 refuses the own loop's second call and
// the task pauses; a downgrade cap switches the router to its cheaper
// model, which finishes the task.
func TestBudgetStopAndDowngrade(t *testing.T) {
	e := newEnv(t)
	e.initDB()
	e.mustRun("budget", "prices", "--set", `{"big": {"input_per_mtok": 1000}, "small": {"input_per_mtok": 0}}`)
	stop := e.mustRun("budget", "add", "--max-usd", "1.5", "--action", "stop")
	stopID := strings.Fields(stop)[2]
	stopID = strings.TrimSuffix(stopID, ":")
	big := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		return costly(decision("", toolCall("file_read", map[string]any{"file_path": "notes.txt", "offset": n + 1}, "read the notes")))
	}))
	small := llmtest.NewOpenAI(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		return decision("", done("Read the notes on the cheaper model"))
	}))
	cfg := filepath.Join(t.TempDir(), "llm.json")
	raw := fmt.Sprintf(`{"default": {"plugin": "llm.openai", "config": {"model": "big", "base_url": %q}},
		"cheaper": {"plugin": "llm.openai", "config": {"model": "small", "base_url": %q}}}`, big.URL, small.URL)
	if err := os.WriteFile(cfg, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	p := e.start("run", "--no-plan", "--llm-config", cfg, "Read the notes")
	if code := p.wait(t, 60*time.Second); code != 3 {
		t.Fatalf("exit %d, want 3 (paused by the budget):\n%s", code, p.out.String())
	}
	if !strings.Contains(p.out.String(), "budget cap "+stopID) {
		t.Fatalf("the output does not name the cap:\n%s", p.out.String())
	}
	var st []struct {
		Spent float64 `json:"spent_usd"`
	}
	if err := json.Unmarshal([]byte(e.mustRun("budget", "status", "--json")), &st); err != nil || len(st) != 1 || st[0].Spent < 1.99 {
		t.Fatalf("budget status %+v %v", st, err)
	}

	// Replace the stop by a downgrade cap: the task goes on on the cheaper model.
	e.mustRun("budget", "rm", stopID)
	e.mustRun("budget", "add", "--max-usd", "1.5", "--hard-usd", "100", "--action", "downgrade", "--scope", "agent", "--scope-id", "overseer")
	id := e.tasks()[0].ID
	p = e.start("resume", id)
	e.answer("approve", e.awaitApproval(p, "overseer.confirm_done"))
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("resume exit %d:\n%s", code, p.out.String())
	}
	if !strings.Contains(p.out.String(), "switched to the router's cheaper model") || len(small.Requests()) == 0 {
		t.Fatalf("no downgrade:\n%s", p.out.String())
	}
	if n := len(big.Requests()); n != 2 {
		t.Errorf("the expensive model was asked %d times, want 2", n)
	}
	e.verifyAudit()
}
