package agents

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// asked is a call a person was asked about.
type asked struct {
	Tool string
	Path string
	Why  string
}

// denier refuses every pending approval through `overseer deny`, as a
// person at a terminal would, and remembers what was asked.
type denier struct {
	mu  sync.Mutex
	got []asked
}

func (d *denier) run(t *testing.T, ctx context.Context, home string) {
	go func() {
		for ctx.Err() == nil {
			res := overseertest.Run(t, home, "", "approvals", "--json")
			var list []struct {
				ID      string `json:"id"`
				Tool    string `json:"tool"`
				Subject string `json:"subject"`
				Summary string `json:"summary"`
			}
			if res.Code == 0 && json.Unmarshal([]byte(res.Stdout), &list) == nil {
				for _, a := range list {
					d.mu.Lock()
					d.got = append(d.got, asked{Tool: a.Tool, Path: a.Subject, Why: a.Summary})
					d.mu.Unlock()
					overseertest.Run(t, home, "", "deny", a.ID, "--reason", "not now")
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

func (d *denier) asked() []asked {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]asked(nil), d.got...)
}

// subagentScript: the main agent spawns one general-purpose sub-agent;
// the sub-agent makes calls one after the other, each once the result of
// the one before is back (before calls[i], before(i) runs, when set).
func subagentScript(before func(i int), calls ...modeltest.ToolCall) modeltest.Script {
	return func(r *modeltest.Request) modeltest.Reply {
		if !r.HasTools {
			return modeltest.Reply{Text: "ok"}
		}
		if strings.Contains(r.Text(), "SUBTASK") {
			n := len(r.Results)
			if n < len(calls) {
				if before != nil {
					before(n)
				}
				c := calls[n]
				return modeltest.Reply{Tool: &c}
			}
			return modeltest.Reply{Text: "sub-agent done"}
		}
		if len(r.Results) == 0 {
			return modeltest.Reply{Tool: &modeltest.ToolCall{Name: "Agent", Input: map[string]any{
				"description": "read the docs", "prompt": "SUBTASK: read the docs", "subagent_type": "general-purpose"}}}
		}
		return modeltest.Reply{Text: "main done"}
	}
}

// subResults are the tool results of the sub-agent's conversation (the
// main agent's Agent call returns at once: the sub-agent runs beside it).
func subResults(srv *modeltest.Server) []modeltest.ToolResult {
	seen := map[string]bool{}
	var out []modeltest.ToolResult
	for _, r := range srv.Requests() {
		if !strings.Contains(r.Text(), "SUBTASK") {
			continue
		}
		for _, tr := range r.Results {
			if !seen[tr.ID] {
				seen[tr.ID] = true
				out = append(out, tr)
			}
		}
	}
	return out
}

func read(p string) modeltest.ToolCall {
	return modeltest.ToolCall{Name: "Read", Input: map[string]any{"file_path": p}}
}

// TestClaudeCodeSubagentGrant: a Claude Code session spawns a sub-agent
// under a grant limited to reads in docs/ (Claude Code 2.1.328 reports the
// sub-agent's agent_id and agent_type in PreToolUse).
func TestClaudeCodeSubagentGrant(t *testing.T) {
	bin, e := newClaudeEnv(t)
	docs := filepath.Join(e.proj, "docs")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.md", "b.md", "c.md"} {
		if err := os.WriteFile(filepath.Join(docs, f), []byte("doc "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	issue := func(t *testing.T, extra ...string) string {
		args := append([]string{"grant", "issue", "--agent", "claude-code", "--subagent-type", "general-purpose",
			"--kind", "file_read", "--under", docs, "--read-only", "--ttl", "1h", "--json"}, extra...)
		r := e.overseer(t, args...)
		var g struct {
			ID string `json:"id"`
		}
		if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &g) != nil || g.ID == "" {
			t.Fatalf("grant issue: %d %s %s", r.Code, r.Stdout, r.Stderr)
		}
		return g.ID
	}

	t.Run("reads pass, a write elsewhere and the call after the budget are put to a person", func(t *testing.T) {
		id := issue(t, "--steps", "2")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var d denier
		d.run(t, ctx, e.home)
		out := filepath.Join(e.proj, "out.txt")
		_, srv, log := e.claude(t, bin, subagentScript(nil,
			read(filepath.Join(docs, "a.md")),
			read(filepath.Join(docs, "b.md")),
			modeltest.ToolCall{Name: "Write", Input: map[string]any{"file_path": out, "content": "x"}},
			read(filepath.Join(docs, "c.md")),
		))
		cancel()
		rs := subResults(srv)
		if len(rs) != 4 {
			t.Fatalf("results %+v\n%s", rs, log)
		}
		for i, want := range []string{"doc a.md", "doc b.md"} {
			if rs[i].IsError || !strings.Contains(rs[i].Content, want) {
				t.Fatalf("read %d: %+v", i, rs[i])
			}
		}
		if !rs[2].IsError || !rs[3].IsError {
			t.Fatalf("the write and the read after the budget ran: %+v", rs[2:4])
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatal("the refused write happened")
		}
		got := d.asked()
		if len(got) != 2 || got[0].Tool != "Write" || got[0].Path != out ||
			got[1].Tool != "Read" || !strings.HasSuffix(got[1].Path, "c.md") || !strings.Contains(got[1].Why, "budget of 2 steps") {
			t.Fatalf("a person was asked about %+v", got)
		}
		r := e.overseer(t, "grant", "show", id)
		if !strings.Contains(r.Stdout, `"steps": 2`) {
			t.Fatalf("grant use: %s", r.Stdout)
		}
	})

	t.Run("revoking mid-session takes effect on the next call", func(t *testing.T) {
		id := issue(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var d denier
		d.run(t, ctx, e.home)
		_, srv, log := e.claude(t, bin, subagentScript(func(i int) {
			if i == 1 {
				if r := e.overseer(t, "grant", "revoke", id, "--reason", "changed my mind"); r.Code != 0 {
					t.Errorf("revoke: %s %s", r.Stdout, r.Stderr)
				}
			}
		}, read(filepath.Join(docs, "a.md")), read(filepath.Join(docs, "b.md"))))
		cancel()
		rs := subResults(srv)
		if len(rs) != 2 || rs[0].IsError || !rs[1].IsError {
			t.Fatalf("results %+v\n%s", rs, log)
		}
		got := d.asked()
		if len(got) != 1 || !strings.Contains(got[0].Why, "revoked") {
			t.Fatalf("a person was asked about %+v", got)
		}
	})
}
