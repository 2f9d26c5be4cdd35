package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/kernel"
)

// TestGrantCommands: issue, list, show and revoke against the database (no
// daemon); issuing refuses under an AI agent.
func TestGrantCommands(t *testing.T) {
	home := t.TempDir()
	k, err := kernel.Open(context.Background(), kernel.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	k.Close()
	docs := t.TempDir()
	issue := []string{"grant", "issue", "--agent", "claude-code", "--subagent-type", "general-purpose",
		"--kind", "file_read", "--under", docs, "--read-only", "--steps", "3", "--ttl", "1h", "--json", "--who", "ann"}
	code, out, errOut := runHookCLI(t, home, "", issue...)
	var g struct {
		ID       string `json:"id"`
		IssuedBy string `json:"issued_by"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &g) != nil || g.ID == "" || g.IssuedBy != "ann" {
		t.Fatalf("issue: %d %s %s", code, out, errOut)
	}
	if code, out, _ := runHookCLI(t, home, "", "grant", "list"); code != 0 || !strings.Contains(out, g.ID) || !strings.Contains(out, "0/3 steps") {
		t.Fatalf("list: %d %s", code, out)
	}
	if code, out, _ := runHookCLI(t, home, "", "grant", "show", g.ID); code != 0 || !strings.Contains(out, `"active": true`) {
		t.Fatalf("show: %d %s", code, out)
	}
	if code, out, errOut := runHookCLI(t, home, "", "grant", "revoke", g.ID, "--reason", "done"); code != 0 || !strings.Contains(out, "Revoked") {
		t.Fatalf("revoke: %d %s %s", code, out, errOut)
	}
	if code, out, _ := runHookCLI(t, home, "", "grant", "list"); code != 0 || !strings.Contains(out, "No grant") {
		t.Fatalf("list after revoking: %d %s", code, out)
	}
	// Without an end, or with a spec that is not valid, nothing is issued.
	if code, _, errOut := runHookCLI(t, home, "", "grant", "issue", "--agent", "codex", "--kind", "shell"); code == 0 || !strings.Contains(errOut, "needs an end") {
		t.Fatalf("no end: %d %s", code, errOut)
	}
	if code, _, errOut := runHookCLI(t, home, "", "grant", "issue", "--agent", "codex", "--ttl", "1h"); code == 0 || !strings.Contains(errOut, "allow-list is empty") {
		t.Fatalf("no permit: %d %s", code, errOut)
	}

	old := agentCheck
	t.Cleanup(func() { agentCheck = old })
	agentCheck = func() (AgentEvidence, bool) {
		return AgentEvidence{Agent: "Claude Code", Why: "CLAUDECODE=1 in the environment"}, true
	}
	if code, _, errOut := runHookCLI(t, home, "", issue...); code != exitRefusedUnderAgent || !strings.Contains(errOut, "running under an AI agent") {
		t.Fatalf("issue under an agent: exit %d %s", code, errOut)
	}
}
