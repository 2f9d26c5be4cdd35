package kernel_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/guard/paths"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// TestSubmittedReadIsRememberedWithItsVerdict: a hook agent's read that runs
// without a person is remembered by the commit that records it (no write of
// its own), whole or partial, and an edit after the file changed behind the
// agent's back is refused until it reads again.
func TestSubmittedReadIsRememberedWithItsVerdict(t *testing.T) {
	k := open(t, clock.Real{}, "")
	proj := t.TempDir()
	f := filepath.Join(proj, "notes.txt")
	if err := os.WriteFile(f, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	submit := func(tool string, args map[string]any) action.Verdict {
		t.Helper()
		sub, err := k.Submit(t.Context(), &action.Action{Tool: tool, Agent: "claude-code", Session: "s-reads", Cwd: proj, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return sub.Verdict
	}
	if v := submit("Read", map[string]any{"file_path": f, "limit": 1}); !v.Level.RunsWithoutPerson() {
		t.Fatalf("a read in the project is %s, want it to run", v.Level)
	}
	ri, ok, err := k.Reads().LastRead(t.Context(), "s-reads", f)
	if err != nil || !ok || ri.Full {
		t.Fatalf("partial read remembered as %+v ok=%v err=%v, want a partial read", ri, ok, err)
	}
	submit("Read", map[string]any{"file_path": f})
	h, _, _ := paths.HashFile(f)
	ri, ok, err = k.Reads().LastRead(t.Context(), "s-reads", f)
	if err != nil || !ok || !ri.Full || ri.Hash != h {
		t.Fatalf("read remembered as %+v ok=%v err=%v, want the whole file with hash %s", ri, ok, err, h)
	}
	if err := os.WriteFile(f, []byte("one\ntwo, by someone else\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(f, later, later); err != nil {
		t.Fatal(err)
	}
	v := submit("Edit", map[string]any{"file_path": f, "old_string": "one", "new_string": "uno"})
	if v.Level != action.Block || !strings.Contains(v.Summary(), "changed since you read it") {
		t.Fatalf("edit after a change behind the agent's back: %s (%s), want block for a stale read", v.Level, v.Summary())
	}
	submit("Read", map[string]any{"file_path": f})
	if v := submit("Edit", map[string]any{"file_path": f, "old_string": "one", "new_string": "uno"}); v.Level == action.Block {
		t.Fatalf("edit after reading again is still blocked: %s", v.Summary())
	}
}

// TestWriteRememberedFromTheCallersFacts: a result recorded with the facts
// of the action the caller submitted (the MCP gateway's) remembers the
// files the call wrote as the agent's reads, as one recorded without them
// does from the action's record.
func TestWriteRememberedFromTheCallersFacts(t *testing.T) {
	for _, withFacts := range []bool{true, false} {
		k := open(t, clock.Real{}, "")
		proj := t.TempDir()
		f := filepath.Join(proj, "new.txt")
		a := &action.Action{Tool: "Write", Agent: "claude-code", Session: "s-w", Cwd: proj,
			Args: map[string]any{"file_path": f, "content": "fresh\n"}}
		sub, err := k.Submit(t.Context(), a)
		if err != nil {
			t.Fatal(err)
		}
		if !sub.Verdict.Level.RunsWithoutPerson() {
			t.Fatalf("writing a new file in the project is %s, want it to run", sub.Verdict.Level)
		}
		if err := os.WriteFile(f, []byte("fresh\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := kernel.Result{ActionID: sub.Action.ID, Agent: a.Agent, Session: a.Session, Tool: a.Tool, Output: "written"}
		if withFacts {
			facts := sub.Action.Facts
			r.Facts = &facts
		}
		if _, err := k.RecordResult(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		h, _, _ := paths.HashFile(f)
		ri, ok, err := k.Reads().LastRead(t.Context(), "s-w", f)
		if err != nil || !ok || !ri.Full || ri.Hash != h {
			t.Errorf("facts given %v: the written file is remembered as %+v ok=%v err=%v, want read whole", withFacts, ri, ok, err)
		}
	}
}

// TestShellReadIsRemembered: a hook agent that reads a file with its shell
// tool (Codex has no read tool) has it remembered as read when the command
// prints the whole file; an edit after the file changed behind its back is
// refused until it prints it again. A command that prints only part of the
// file, or sends it elsewhere, does not count (nor replace the earlier
// read).
func TestShellReadIsRemembered(t *testing.T) {
	k := open(t, clock.Real{}, "")
	proj := t.TempDir()
	f := filepath.Join(proj, "notes.txt")
	if err := os.WriteFile(f, []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const sess = "s-shell-reads"
	submit := func(agent, tool string, args map[string]any) action.Verdict {
		t.Helper()
		sub, err := k.Submit(t.Context(), &action.Action{Tool: tool, Agent: agent, Session: sess, Cwd: proj, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return sub.Verdict
	}
	bash := func(cmd string) action.Verdict {
		t.Helper()
		v := submit("codex", "Bash", map[string]any{"command": cmd})
		if !v.Level.RunsWithoutPerson() {
			t.Fatalf("%q is %s (%s), want it to run", cmd, v.Level, v.Summary())
		}
		return v
	}
	readHash := func() string {
		t.Helper()
		ri, ok, err := k.Reads().LastRead(t.Context(), sess, f)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ""
		}
		if !ri.Full {
			t.Fatalf("a shell read remembered as partial: %+v", ri)
		}
		return ri.Hash
	}
	change := func(content string) {
		t.Helper()
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(time.Minute)
		if err := os.Chtimes(f, later, later); err != nil {
			t.Fatal(err)
		}
	}
	patch := func() action.Verdict {
		t.Helper()
		return submit("codex", "apply_patch", map[string]any{"command": "*** Begin Patch\n*** Update File: notes.txt\n@@\n-one\n+uno\n*** End Patch\n"})
	}

	// Partial, filtered or redirected output is no read.
	for _, cmd := range []string{"sed -n '1,2p' notes.txt", "head -n 1 notes.txt", "grep one notes.txt",
		"cat notes.txt > copy.txt", "cat notes.txt | wc -l", "tail -n 2 notes.txt"} {
		bash(cmd)
		if h := readHash(); h != "" {
			t.Fatalf("%q remembered a read", cmd)
		}
	}
	// Codex's way of reading: bash -lc with a line range that covers the
	// file.
	bash(`bash -lc "sed -n '1,200p' notes.txt"`)
	h0, _, _ := paths.HashFile(f)
	if got := readHash(); got != h0 {
		t.Fatalf("sed -n 1,200p of a 3-line file: read hash %q, want %q", got, h0)
	}
	change("one\ntwo\nthree\nfour, by someone else\n")
	if v := patch(); v.Level != action.Block || !strings.Contains(v.Summary(), "changed since you read it") {
		t.Fatalf("a patch after a change behind the agent's back: %s (%s), want block for a stale read", v.Level, v.Summary())
	}
	// A partial look at the new content does not refresh the read.
	bash("head -n 2 notes.txt")
	if v := patch(); v.Level != action.Block {
		t.Fatalf("a patch after a partial re-read: %s, want still block", v.Level)
	}
	bash("nl -ba notes.txt | sed -n '1,120p'")
	if v := patch(); v.Level == action.Block {
		t.Fatalf("a patch after reading again with nl | sed: %s", v.Summary())
	}
	// A symlink is remembered as the file it names.
	link := filepath.Join(proj, "link.txt")
	if err := os.Symlink(f, link); err != nil {
		t.Fatal(err)
	}
	change("five\n")
	bash("cat link.txt")
	h1, _, _ := paths.HashFile(f)
	if got := readHash(); got != h1 {
		t.Fatalf("cat through a symlink: read hash %q, want %q", got, h1)
	}
	// Claude Code's Bash counts too; a read by another session does not.
	change("six\n")
	sub, err := k.Submit(t.Context(), &action.Action{Tool: "Bash", Agent: "claude-code", Session: "other", Cwd: proj,
		Args: map[string]any{"command": "cat notes.txt"}})
	if err != nil || !sub.Verdict.Level.RunsWithoutPerson() {
		t.Fatalf("cat in another session: %v %v", err, sub)
	}
	if got := readHash(); got != h1 {
		t.Fatalf("another session's read changed this session's: %q", got)
	}
}
