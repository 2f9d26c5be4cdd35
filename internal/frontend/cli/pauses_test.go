package cli

import (
	"strings"
	"testing"
)

// TestPauseResumeAgentCommands: pause-agent, paused and resume-agent on the
// database (no daemon), a paused agent's hook call refused with how to
// resume, and the commands refused under an agent.
func TestPauseResumeAgentCommands(t *testing.T) {
	old := agentCheck
	t.Cleanup(func() { agentCheck = old })
	agentCheck = func() (AgentEvidence, bool) { return AgentEvidence{}, false }
	home := hookHome(t)
	if _, out, _ := runHookCLI(t, home, bashEvent("echo hi"), "hook", "claude-code"); !strings.Contains(out, `"permissionDecision":"allow"`) {
		t.Fatalf("before the pause: %s", out)
	}

	if code, out, errOut := runHookCLI(t, home, "", "pause-agent", "claude-code", "--reason", "weekend", "--who", "ann"); code != 0 ||
		!strings.Contains(out, "overseer resume-agent claude-code") {
		t.Fatalf("pause-agent: exit %d %s %s", code, out, errOut)
	}
	if code, out, _ := runHookCLI(t, home, "", "paused"); code != 0 || !strings.Contains(out, "claude-code") || !strings.Contains(out, "weekend") {
		t.Fatalf("paused: exit %d %s", code, out)
	}
	code, out, errOut := runHookCLI(t, home, bashEvent("echo hi"), "hook", "claude-code")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "overseer resume-agent claude-code") ||
		!strings.Contains(out, "weekend") || !strings.Contains(out, `"continue":false`) {
		t.Fatalf("a paused agent's hook call: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	// Codex is not paused.
	if _, out, _ := runHookCLI(t, home, bashEvent("echo hi"), "hook", "codex"); strings.Contains(out, "deny") {
		t.Fatalf("codex refused: %s", out)
	}

	// Under an agent, neither command runs.
	agentCheck = func() (AgentEvidence, bool) {
		return AgentEvidence{Agent: "Claude Code", Why: "CLAUDECODE=1 in the environment"}, true
	}
	for _, args := range [][]string{{"resume-agent", "claude-code"}, {"pause-agent", "codex"}} {
		if code, _, errOut := runHookCLI(t, home, "", args...); code != exitRefusedUnderAgent {
			t.Errorf("%v under an agent: exit %d %s", args, code, errOut)
		}
	}
	agentCheck = func() (AgentEvidence, bool) { return AgentEvidence{}, false }

	if code, out, errOut := runHookCLI(t, home, "", "resume-agent", "claude-code"); code != 0 {
		t.Fatalf("resume-agent: exit %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runHookCLI(t, home, "", "resume-agent", "claude-code"); code != 1 || !strings.Contains(errOut, "not paused") {
		t.Fatalf("resume-agent again: exit %d %s", code, errOut)
	}
	if _, out, _ := runHookCLI(t, home, bashEvent("echo hi"), "hook", "claude-code"); !strings.Contains(out, `"permissionDecision":"allow"`) {
		t.Fatalf("after the resume: %s", out)
	}
}

// TestLimitsAndBudgetCommands drives overseer limits and budget on the
// database: add, list, set, use, remove; changes refused under an agent.
func TestLimitsAndBudgetCommands(t *testing.T) {
	old := agentCheck
	t.Cleanup(func() { agentCheck = old })
	agentCheck = func() (AgentEvidence, bool) { return AgentEvidence{}, false }
	home := hookHome(t)
	runHookCLI(t, home, bashEvent("echo hi"), "hook", "claude-code") // creates the database
	run := func(args ...string) (int, string) {
		t.Helper()
		code, out, errOut := runHookCLI(t, home, "", args...)
		return code, out + errOut
	}
	code, out := run("limits", "add", "--agent", "claude-code", "--tool", "Bash", "--max", "1", "--window", "10m", "--action", "block", "--who", "ann")
	if code != 0 || !strings.Contains(out, "at most 1 calls in 10m0s, then block") {
		t.Fatalf("limits add: %d %s", code, out)
	}
	id := strings.TrimSuffix(strings.Fields(out)[2], ":")
	if code, out := run("limits"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "claude-code") {
		t.Fatalf("limits: %d %s", code, out)
	}
	runHookCLI(t, home, bashEvent("echo one"), "hook", "claude-code")
	if _, out, _ := runHookCLI(t, home, bashEvent("echo two"), "hook", "claude-code"); !strings.Contains(out, "rate limit "+id) {
		t.Fatalf("the second call: %s", out)
	}
	if code, out := run("limits", "usage"); code != 0 || !strings.Contains(out, "[##########] 100%") {
		t.Fatalf("limits usage: %d %s", code, out)
	}
	if code, out := run("limits", "set", id, "--max", "50"); code != 0 || !strings.Contains(out, "at most 50 calls in 10m0s") {
		t.Fatalf("limits set: %d %s", code, out)
	}
	code, out = run("budget", "add", "--max-usd", "5", "--period", "weekly", "--action", "notify")
	if code != 0 || !strings.Contains(out, "$5.00 weekly (global), then notify") {
		t.Fatalf("budget add: %d %s", code, out)
	}
	capID := strings.TrimSuffix(strings.Fields(out)[2], ":")
	if code, out := run("budget"); code != 0 || !strings.Contains(out, "$0.00") || !strings.Contains(out, "$5.00") {
		t.Fatalf("budget: %d %s", code, out)
	}
	if code, out := run("budget", "prices", "--set", `{"m*":{"input_per_mtok":1,"output_per_mtok":2}}`); code != 0 || !strings.Contains(out, `"m*"`) {
		t.Fatalf("budget prices: %d %s", code, out)
	}
	agentCheck = func() (AgentEvidence, bool) { return AgentEvidence{Agent: "Codex", Why: "test"}, true }
	for _, args := range [][]string{{"limits", "set", id, "--max", "1000"}, {"limits", "rm", id}, {"budget", "add", "--max-usd", "1e6"},
		{"budget", "rm", capID},
		{"budget", "prices", "--set", "{}"}} {
		if code, _ := run(args...); code != exitRefusedUnderAgent {
			t.Errorf("%v under an agent: exit %d", args, code)
		}
	}
	if code, _ := run("limits"); code != 0 {
		t.Errorf("listing under an agent: exit %d", code)
	}
	agentCheck = func() (AgentEvidence, bool) { return AgentEvidence{}, false }
	if code, out := run("limits", "rm", id); code != 0 {
		t.Fatalf("limits rm: %d %s", code, out)
	}
	if code, out := run("limits", "rm", id); code != 1 || !strings.Contains(out, "no rate limit") {
		t.Fatalf("limits rm again: %d %s", code, out)
	}
	if code, out := run("budget", "rm", capID); code != 0 || strings.TrimSpace(out) != "Removed budget cap "+capID+"." {
		t.Fatalf("budget rm: %d %s", code, out)
	}
	if code, out := run("budget", "rm", capID); code != 1 || !strings.Contains(out, "no budget cap "+capID) {
		t.Fatalf("budget rm again: %d %s", code, out)
	}
}
