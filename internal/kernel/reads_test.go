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
