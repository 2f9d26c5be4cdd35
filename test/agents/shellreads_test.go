package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// TestCodexShellReadsCountAsReads: the real Codex, hooked, reads a file
// the way it does — `sed -n '1,200p'` in its shell — and someone changes
// the file behind its back: its patch is refused as an edit of a stale
// read. After reading it again the same way, the patch goes through.
func TestCodexShellReadsCountAsReads(t *testing.T) {
	bin, e, codexHome := newCodexEnv(t)
	notes := filepath.Join(e.proj, "notes.txt")
	if err := os.WriteFile(notes, []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := modeltest.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "sed -n '1,200p' notes.txt"}}
	patch := modeltest.ToolCall{Name: "apply_patch", Freeform: "*** Begin Patch\n*** Update File: notes.txt\n@@\n-alpha\n+ALPHA\n*** End Patch\n"}
	// Someone else changes the file after the agent read it.
	script := changedAfterRead(t, notes, "alpha\nbeta\ngamma, by someone else\n", read, patch, read, patch)
	srv, out := e.codexWith(t, bin, codexHome, codexPatchModel, "", script)
	rs := srv.Results()
	if len(rs) != 4 {
		t.Fatalf("results %+v\n%s", rs, out)
	}
	if !strings.Contains(rs[0].Content, "alpha") {
		t.Fatalf("the read: %+v", rs[0])
	}
	if !strings.Contains(rs[1].Content, "changed since you read it") {
		t.Fatalf("the patch of a stale read: %+v\n%s", rs[1], out)
	}
	if !strings.Contains(rs[2].Content, "gamma") || !strings.Contains(rs[3].Content, "Success.") {
		t.Fatalf("the read and patch after reading again: %+v %+v\n%s", rs[2], rs[3], out)
	}
	if b, _ := os.ReadFile(notes); string(b) != "ALPHA\nbeta\ngamma, by someone else\n" {
		t.Fatalf("notes.txt holds %q", b)
	}
}

// TestClaudeCodeShellReadRefreshes: the real Claude Code, hooked, reads a
// file with Read; someone changes it; its edit is refused as a stale read;
// it reads the file again with `cat` in its Bash tool, and the edit goes
// through — a shell read counts as a read.
func TestClaudeCodeShellReadRefreshes(t *testing.T) {
	bin, e := newClaudeEnv(t)
	notes := filepath.Join(e.proj, "notes.txt")
	if err := os.WriteFile(notes, []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := modeltest.ToolCall{Name: "Edit", Input: map[string]any{"file_path": notes, "old_string": "beta", "new_string": "gamma"}}
	script := changedAfterRead(t, notes, "beta\n", modeltest.ToolCall{Name: "Read", Input: map[string]any{"file_path": notes}}, edit,
		modeltest.ToolCall{Name: "Bash", Input: map[string]any{"command": "cat notes.txt", "description": "read the notes again"}}, edit)
	_, srv, out := e.claude(t, bin, script)
	rs := srv.Results()
	if len(rs) != 4 {
		t.Fatalf("results %+v\n%s", rs, out)
	}
	if !rs[1].IsError || !strings.Contains(rs[1].Content, "changed since you read it") {
		t.Fatalf("the edit of a stale read: %+v", rs[1])
	}
	if rs[2].IsError || !strings.Contains(rs[2].Content, "beta") {
		t.Fatalf("the cat: %+v", rs[2])
	}
	if rs[3].IsError {
		t.Fatalf("the edit after reading with cat: %+v", rs[3])
	}
	if b, _ := os.ReadFile(notes); string(b) != "gamma\n" {
		t.Fatalf("the file holds %q", b)
	}
}
