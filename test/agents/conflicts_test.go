package agents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// TestClaudeCodeConflict: two Claude Code sessions write one file; the
// second is held for a person, and what it is asked names the first.
func TestClaudeCodeConflict(t *testing.T) {
	bin, e := newClaudeEnv(t)
	shared := filepath.Join(e.proj, "shared.txt")
	write := func(content string) modeltest.Script {
		return modeltest.OneCall("Write", map[string]any{"file_path": shared, "content": content})
	}
	res, srv, out := e.claude(t, bin, write("first\n"))
	if rs := srv.Results(); len(rs) != 1 || rs[0].IsError {
		t.Fatalf("first session: %+v\n%s", rs, out)
	}
	first, _ := res["session_id"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var d denier
	d.run(t, ctx, e.home)
	// (Claude Code itself wants an existing file read before it is written.)
	_, srv, out = e.claude(t, bin, modeltest.Steps(
		modeltest.ToolCall{Name: "Read", Input: map[string]any{"file_path": shared}},
		modeltest.ToolCall{Name: "Write", Input: map[string]any{"file_path": shared, "content": "second\n"}}))
	cancel()
	if rs := srv.Results(); len(rs) != 2 || rs[0].IsError || !rs[1].IsError {
		t.Fatalf("second session: %+v\n%s", rs, out)
	}
	if b, _ := os.ReadFile(shared); string(b) != "first\n" {
		t.Fatalf("the file holds %q", b)
	}
	got := d.asked()
	if len(got) != 1 || got[0].Tool != "Write" || !strings.Contains(got[0].Why, "session "+first) {
		t.Fatalf("a person was asked about %+v (first session %s)", got, first)
	}
}

// TestClaudeCodeStaleRead: a file changed behind the agent's back after it
// read it is refused for edit until the agent reads it again.
func TestClaudeCodeStaleRead(t *testing.T) {
	bin, e := newClaudeEnv(t)
	notes := filepath.Join(e.proj, "notes.txt")
	if err := os.WriteFile(notes, []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := modeltest.ToolCall{Name: "Edit", Input: map[string]any{"file_path": notes, "old_string": "beta", "new_string": "gamma"}}
	// Someone else changes the file after the agent read it.
	script := changedAfterRead(t, notes, "beta\n", modeltest.ToolCall{Name: "Read", Input: map[string]any{"file_path": notes}}, edit,
		modeltest.ToolCall{Name: "Read", Input: map[string]any{"file_path": notes}}, edit)
	_, srv, out := e.claude(t, bin, script)
	rs := srv.Results()
	if len(rs) != 4 {
		t.Fatalf("results %+v\n%s", rs, out)
	}
	if !rs[1].IsError || !strings.Contains(rs[1].Content, "changed since you read it") {
		t.Fatalf("the edit of a stale read: %+v", rs[1])
	}
	if rs[3].IsError {
		t.Fatalf("the edit after reading again: %+v", rs[3])
	}
	if b, _ := os.ReadFile(notes); string(b) != "gamma\n" {
		t.Fatalf("the file holds %q", b)
	}
}
