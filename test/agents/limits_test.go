package agents

import (
	"fmt"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// TestClaudeCodeLimits: the real Claude Code CLI with a scripted model,
// hooked to a running daemon. A rate limit refuses its second Bash call; a
// paused agent's call is refused with why and how a person resumes it; a
// budget cap refuses its call once the usage in its transcript (priced by
// the budget's table) reaches the cap.
func TestClaudeCodeLimits(t *testing.T) {
	bin, e := newClaudeEnv(t)

	t.Run("rate limit blocks", func(t *testing.T) {
		out := e.must(t, "limits", "add", "--agent", "claude-code", "--tool", "Bash", "--max", "1", "--window", "1h", "--action", "block")
		id := strings.TrimSuffix(strings.Fields(out)[2], ":")
		defer e.must(t, "limits", "rm", id)
		_, srv, cli := e.claude(t, bin, modeltest.Steps(
			modeltest.ToolCall{Name: "Bash", Input: map[string]any{"command": "echo first-call"}},
			modeltest.ToolCall{Name: "Bash", Input: map[string]any{"command": "echo second-call"}}))
		rs := srv.Results()
		if len(rs) != 2 || rs[0].IsError || !strings.Contains(rs[0].Content, "first-call") ||
			!rs[1].IsError || !strings.Contains(rs[1].Content, "rate limit "+id) || strings.Contains(rs[1].Content, "second-call") {
			t.Fatalf("tool results %+v\n%s", rs, cli)
		}
	})

	t.Run("rate limit notify_only and ask", func(t *testing.T) {
		out := e.must(t, "limits", "add", "--agent", "claude-code", "--tool", "Bash", "--max", "1", "--window", "1h", "--action", "notify_only")
		id := strings.TrimSuffix(strings.Fields(out)[2], ":")
		_, srv, cli := e.claude(t, bin, modeltest.Steps(
			modeltest.ToolCall{Name: "Bash", Input: map[string]any{"command": "echo note-one"}},
			modeltest.ToolCall{Name: "Bash", Input: map[string]any{"command": "echo note-two"}}))
		if rs := srv.Results(); len(rs) != 2 || rs[1].IsError || !strings.Contains(rs[1].Content, "note-two") {
			t.Fatalf("notify_only: %+v\n%s", rs, cli)
		}
		alerted := false
		for _, r := range e.audit(t) {
			alerted = alerted || r.Type == "alert" && strings.Contains(string(r.Data), id)
		}
		if !alerted {
			t.Fatal("no alert recorded for the notify_only limit")
		}
		e.must(t, "limits", "set", id, "--action", "ask")
		// Over the limit now: the next call waits for a person, who approves.
		e.whileApproving(t, func() string {
			_, srv, cli = e.claude(t, bin, modeltest.OneCall("Bash", map[string]any{"command": "echo asked-first"}))
			return cli
		})
		if rs := srv.Results(); len(rs) != 1 || rs[0].IsError || !strings.Contains(rs[0].Content, "asked-first") {
			t.Fatalf("ask: %+v\n%s", rs, cli)
		}
		e.must(t, "limits", "rm", id)
	})

	// stopped checks that Claude Code was told to stop its task (the call
	// denied, the task ended by the hook) and that the call's verdict, as
	// the audit log holds it, says each of want.
	stopped := func(t *testing.T, res map[string]any, cli, command string, want ...string) {
		t.Helper()
		if res["terminal_reason"] != "hook_stopped" || !strings.Contains(fmt.Sprint(res["permission_denials"]), command) {
			t.Fatalf("Claude Code was not stopped:\n%s", cli)
		}
		var verdict string
		for _, r := range e.audit(t) {
			if r.Type == "verdict" && r.Agent == "claude-code" && strings.Contains(string(r.Data), "L2") {
				verdict = string(r.Data)
			}
		}
		for _, w := range want {
			if !strings.Contains(verdict, w) {
				t.Fatalf("the refusal does not say %q: %s", w, verdict)
			}
		}
	}

	t.Run("a paused agent is refused with how to resume it", func(t *testing.T) {
		e.must(t, "pause-agent", "claude-code", "--reason", "away for the weekend")
		res, srv, cli := e.claude(t, bin, modeltest.OneCall("Bash", map[string]any{"command": "echo while-paused"}))
		if rs := srv.Results(); len(rs) != 0 {
			t.Fatalf("the call ran: %+v", rs)
		}
		stopped(t, res, cli, "while-paused", "away for the weekend", "overseer resume-agent claude-code")
		e.must(t, "resume-agent", "claude-code")
		_, srv, cli = e.claude(t, bin, modeltest.OneCall("Bash", map[string]any{"command": "echo resumed-call"}))
		if rs := srv.Results(); len(rs) != 1 || rs[0].IsError || !strings.Contains(rs[0].Content, "resumed-call") {
			t.Fatalf("after the resume: %+v\n%s", rs, cli)
		}
	})

	t.Run("budget cap from the transcript", func(t *testing.T) {
		// The scripted model reports 10 input tokens a turn: $1 each.
		e.must(t, "budget", "prices", "--set", `{"claude-sonnet-4-5*": {"input_per_mtok": 100000, "output_per_mtok": 0}}`)
		out := e.must(t, "budget", "add", "--scope", "agent", "--scope-id", "claude-code", "--max-usd", "0.5", "--action", "stop")
		id := strings.TrimSuffix(strings.Fields(out)[2], ":")
		// Claude Code may write a turn's usage to its transcript just after
		// the hook of that turn's call runs: the cap then refuses the next
		// call. At most one call runs past the cap.
		res, srv, cli := e.claude(t, bin, modeltest.Steps(
			modeltest.ToolCall{Name: "Bash", Input: map[string]any{"command": "echo over-budget-1"}},
			modeltest.ToolCall{Name: "Bash", Input: map[string]any{"command": "echo over-budget-2"}}))
		rs := srv.Results()
		if len(rs) > 1 {
			t.Fatalf("calls ran past the cap: %+v\nbudget:\n%s", rs, e.must(t, "budget"))
		}
		stopped(t, res, cli, fmt.Sprintf("over-budget-%d", len(rs)+1), "budget cap "+id)
		if st := e.must(t, "budget"); !strings.Contains(st, "claude-code") {
			t.Fatalf("budget status:\n%s", st)
		}
	})
}

// TestCodexBudget: the real Codex CLI with a scripted model. Its session's
// token counts (the rollout's token_count totals) count against an agent
// budget cap: once they reach it, its command is refused.
func TestCodexBudget(t *testing.T) {
	bin, e, codexHome := newCodexEnv(t)
	// The scripted model reports 10 input tokens a turn: $1 each.
	e.must(t, "budget", "prices", "--set", `{"*": {"input_per_mtok": 100000, "output_per_mtok": 0}}`)
	e.must(t, "budget", "add", "--scope", "agent", "--scope-id", "codex", "--max-usd", "1.5", "--action", "stop")
	srv, out := e.codex(t, bin, codexHome, modeltest.Steps(
		modeltest.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "echo first-codex"}},
		modeltest.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "echo second-codex"}},
		modeltest.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "echo third-codex"}}))
	// Each turn costs $1: the first two commands run ($0, then $1 spent),
	// the third ($2 spent) is refused.
	rs := srv.Results()
	st := e.overseer(t, "budget")
	if len(rs) != 3 || !strings.Contains(rs[0].Content, "Output:\nfirst-codex") || !strings.Contains(rs[1].Content, "Output:\nsecond-codex") ||
		!strings.Contains(rs[2].Content, "budget cap") || strings.Contains(rs[2].Content, "Output:") {
		t.Fatalf("tool results %+v\nbudget:\n%s\n%s", rs, st.Stdout, out)
	}
	if !strings.Contains(st.Stdout, "codex") {
		t.Fatalf("budget status:\n%s", st.Stdout)
	}
}
