package run

import (
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/llmtest"
)

// TestPipelineL1AndL5: seed 000's L1 and L5 in the own loop, against a
// scripted model (Anthropic wire format). An argument the bash tool's
// schema does not know is stripped and the model is told; a session that
// keeps getting the same result is first told to switch strategy, and only
// when it stagnates again is a person asked.
func TestPipelineL1AndL5(t *testing.T) {
	e := newEnv(t)
	echo := func(try string, extra map[string]any) llmtest.Reply {
		args := map[string]any{"command": "echo same", "description": "try " + try}
		for k, v := range extra {
			args[k] = v
		}
		return decision("Trying again.\n\n", toolCall("bash", args, "look for progress"))
	}
	inPrompt := func(n int, req llmtest.Request, want string) bool {
		if !strings.Contains(string(req.Body), want) {
			t.Errorf("request %d: the prompt lacks %q:\n%s", n, want, req.LastUser)
			return false
		}
		return true
	}
	srv := llmtest.NewAnthropic(t, llmtest.Func(func(n int, req llmtest.Request) llmtest.Reply {
		switch n {
		case 0:
			return echo("a", map[string]any{"sudo": true})
		case 1:
			if !inPrompt(n, req, "ignored unknown argument(s) sudo") {
				return llmtest.Fail("no L1 notice")
			}
			return echo("b", nil)
		case 2:
			if strings.Contains(string(req.Body), "STRATEGY SWITCH") {
				t.Errorf("request %d: a strategy switch before the threshold", n)
			}
			return echo("c", nil)
		case 3:
			return echo("d", nil) // its result is the third no-progress note
		case 4:
			if !inPrompt(n, req, "STRATEGY SWITCH") {
				return llmtest.Fail("no strategy switch")
			}
			return echo("e", nil) // it ignores the instruction: the fourth note
		case 5:
			return echo("f", nil) // now a person must approve
		case 6:
			return decision("Done.\n\n", done("gave up on echo"))
		}
		return llmtest.Fail("request %d was not expected", n)
	}))
	p := e.start("run", "--no-plan", "--model", "anthropic:test-model@"+srv.URL, "Make progress")
	id := e.awaitApproval(p, "bash")
	if got := len(srv.Requests()); got != 6 {
		t.Fatalf("a person was asked after %d requests, want 6 (after the strategy switch failed)", got)
	}
	e.answer("approve", id)
	e.answer("approve", e.awaitApproval(p, "overseer.confirm_done"))
	if code := p.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out.String())
	}
	if out := p.out.String(); !strings.Contains(out, "switch strategy") {
		t.Errorf("the output does not say the model was told to switch strategy:\n%s", out)
	}
	r := e.run("audit", "export")
	if !strings.Contains(r.Stdout, "stripped-args: sudo") {
		t.Errorf("the stripped argument is not noted in the audit log")
	}
	e.verifyAudit()
}
