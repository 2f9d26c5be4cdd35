package agents

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// TestClaudeCodeAnomalyRollback: the real Claude Code CLI with a scripted
// model, hooked to a running daemon, rewrites four files (Write and Edit,
// each after a Read); its fifth write within five minutes crosses a
// stop_and_rollback anomaly rule. The call is refused and Claude Code is
// told to stop, the agent is paused (its next call is refused with why
// and how a person resumes it), the four changes are rolled back newest
// first, byte for byte, and the audit log names every step.
func TestClaudeCodeAnomalyRollback(t *testing.T) {
	bin, e := newClaudeEnv(t)
	e.must(t, "anomaly", "add", "--who", "alice", "--json",
		`{"name":"write burst","tool_name":"file_[we]*","agent":"claude-code","threshold_count":5,"window_seconds":300,"action":"stop_and_rollback","rollback":10}`)
	original := map[string]string{}
	var calls []modeltest.ToolCall
	var paths []string
	for i := range 5 {
		p := filepath.Join(e.proj, fmt.Sprintf("f%d.txt", i))
		original[p] = fmt.Sprintf("original %d\r\nzweite Zeile: grün\t\nno newline at the end", i)
		if err := os.WriteFile(p, []byte(original[p]), 0o640); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		calls = append(calls, modeltest.ToolCall{Name: "Read", Input: map[string]any{"file_path": p}})
		if i%2 == 1 {
			calls = append(calls, modeltest.ToolCall{Name: "Edit", Input: map[string]any{"file_path": p,
				"old_string": fmt.Sprintf("original %d", i), "new_string": "edited in the burst"}})
		} else {
			calls = append(calls, modeltest.ToolCall{Name: "Write", Input: map[string]any{"file_path": p, "content": "clobbered in the burst\n"}})
		}
	}
	res, srv, cli := e.claude(t, bin, modeltest.Steps(calls...))
	rs := srv.Results()
	// Nine results: five reads and four changes; the fifth change never ran.
	if len(rs) != 9 {
		t.Fatalf("tool results %d, want 9: %+v\n%s", len(rs), rs, cli)
	}
	for i, r := range rs {
		if r.IsError {
			t.Fatalf("result %d is an error: %+v\n%s", i, r, cli)
		}
	}
	if res["terminal_reason"] != "hook_stopped" || !strings.Contains(fmt.Sprint(res["permission_denials"]), "f4.txt") {
		t.Fatalf("Claude Code was not stopped at the fifth change: %v\n%s", res, cli)
	}
	// Every file is as it was, byte for byte (the fifth was never changed).
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != original[p] {
			t.Errorf("%s after the rollback: %q %v, want %q", filepath.Base(p), b, err, original[p])
		}
	}
	// The audit log names every step: the anomaly (on the fifth change),
	// the pause, and one rollback per change, newest first.
	var steps []string
	var rolled []string
	for _, r := range e.audit(t) {
		switch r.Type {
		case "anomaly_detected", "agent_paused", "rolled_back":
			steps = append(steps, r.Type)
		}
		if r.Type == "rolled_back" {
			var d struct {
				Paths []string `json:"paths"`
			}
			if err := json.Unmarshal(r.Data, &d); err != nil || len(d.Paths) != 1 {
				t.Fatalf("rolled_back %s: %v", r.Data, err)
			}
			rolled = append(rolled, filepath.Base(d.Paths[0]))
		}
	}
	if got := strings.Join(steps, " "); got != "anomaly_detected agent_paused rolled_back rolled_back rolled_back rolled_back" {
		t.Fatalf("audit steps %q", got)
	}
	if got := strings.Join(rolled, " "); got != "f3.txt f2.txt f1.txt f0.txt" {
		t.Fatalf("rolled back %q, want newest first", got)
	}
	// Paused: the next call is refused with why and how to resume.
	res, srv, cli = e.claude(t, bin, modeltest.OneCall("Bash", map[string]any{"command": "echo after-the-anomaly"}))
	if len(srv.Results()) != 0 || res["terminal_reason"] != "hook_stopped" {
		t.Fatalf("a paused agent's call ran: %+v\n%s", srv.Results(), cli)
	}
	var refusal string
	for _, r := range e.audit(t) {
		if r.Type == "verdict" && r.Agent == "claude-code" {
			refusal = string(r.Data) // the last one: the call after the anomaly
		}
	}
	for _, want := range []string{"paused", "write burst", "overseer resume-agent claude-code"} {
		if !strings.Contains(refusal, want) {
			t.Fatalf("the refusal does not say %q: %s\n%s", want, refusal, cli)
		}
	}
	if r := e.overseer(t, "audit", "verify"); r.Code != 0 {
		t.Fatalf("audit verify: %s %s", r.Stdout, r.Stderr)
	}
}

// TestClaudeCodeCostRule: the spend Claude Code reports (its transcript's
// usage, priced by the budget's table: $1 a turn) counts for a
// cost_threshold auto-rule, as it does for budget caps: once the agent
// has spent $1.50 within the hour, its Bash calls are blocked by the rule
// (the first runs: at most one turn, $1, is spent by then).
func TestClaudeCodeCostRule(t *testing.T) {
	bin, e := newClaudeEnv(t)
	e.must(t, "budget", "prices", "--set", `{"claude-sonnet-4-5*": {"input_per_mtok": 100000, "output_per_mtok": 0}}`)
	e.must(t, "auto-rules", "add", "--who", "alice", "--json", `{"name":"costly agent","trigger":{"type":"cost_threshold","tool":"Bash","agent":"claude-code","usd":1.5,"window_minutes":60},"action":{"type":"block_tool"}}`)
	// Claude Code writes a turn's usage to its transcript when it gets to
	// it: just after the hook of that turn's call runs, or before, and on a
	// busy machine a turn or two later still (the hook reads the
	// transcript as it is). So some call after the first is blocked, the
	// second at the earliest; five give the transcript room to lag.
	var steps []modeltest.ToolCall
	for i := 1; i <= 5; i++ {
		steps = append(steps, modeltest.ToolCall{Name: "Bash", Input: map[string]any{"command": fmt.Sprintf("echo spend-%d", i)}})
	}
	_, srv, cli := e.claude(t, bin, modeltest.Steps(steps...))
	rs := srv.Results()
	blocked := -1
	for i, r := range rs {
		if r.IsError {
			blocked = i
			if !strings.Contains(r.Content, "costly agent") || strings.Contains(r.Content, fmt.Sprintf("spend-%d\n", i+1)) {
				t.Fatalf("result %d: %+v\n%s", i, r, cli)
			}
			break
		}
	}
	if blocked < 1 {
		t.Fatalf("the cost rule did not block a call after the first turn's spend: %+v\n%s", rs, cli)
	}
	log := e.overseer(t, "auto-rules", "log")
	if log.Code != 0 || !strings.Contains(log.Stdout, "costly agent") {
		t.Fatalf("rule log: %s %s", log.Stdout, log.Stderr)
	}
}
