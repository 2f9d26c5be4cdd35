package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/store"
)

// TestPrintApprovals: each request shows what it runs, where, for which
// agent and session, how long it has waited, and who holds the call; a
// withdrawn one says so.
func TestPrintApprovals(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	pending := &store.Approval{ID: "apr_one", Tool: "Bash", Level: action.Approve, Status: store.StatusPending,
		Agent: "claude-code", Session: "8f2c1a9e", CreatedAt: now.Add(-133 * time.Second), Deadline: now.Add(7 * time.Minute),
		Action: action.Action{Cwd: "/home/ann/proj/app", Args: map[string]any{"command": "rm -rf ./tmp_*"}},
		Asker:  &store.Asker{Kind: "hook", PID: 4242, Until: now.Add(5 * time.Minute)}}
	withdrawn := &store.Approval{ID: "apr_two", Tool: "deploy", Level: action.Confirm, Status: store.StatusWithdrawn,
		Agent: "codex", CreatedAt: now.Add(-time.Hour), Deadline: now.Add(-50 * time.Minute),
		Action: action.Action{Cwd: "/srv", Args: map[string]any{"target": "prod"}},
		Answer: &store.Answer{Decision: "withdraw", Who: "withdrawn", Channel: "withdrawn", Reason: "the agent's hook (process 7) is gone"}}
	var b bytes.Buffer
	printApprovals(&b, []approvalItem{itemOf(pending), itemOf(withdrawn)}, now, "/home/ann")
	out := b.String()
	for _, want := range []string{
		"apr_one  approve  Bash  waiting 2m13s · times out in 7m00s",
		"  runs     rm -rf ./tmp_*\n",
		"  in       ~/proj/app\n",
		"  agent    claude-code · session 8f2c1a9e\n",
		"  asker    hook, process 4242, waits 5m00s more\n",
		"apr_two  confirm  deploy  asked 1h00m ago · withdrawn: the agent's hook (process 7) is gone",
		`  runs     {"target":"prod"}`,
		"  in       /srv\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}
