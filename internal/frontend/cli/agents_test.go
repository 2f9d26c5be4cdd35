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
