package kernel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
)

var writes int

// sessionWrite writes path in session (each time other content: L2's
// repeat detection is not what is tested).
func sessionWrite(session, path string) *action.Action {
	writes++
	return &action.Action{Agent: "claude-code", Session: session, Tool: "Write", Cwd: "/proj",
		Args: map[string]any{"file_path": path, "content": fmt.Sprint("x", writes)}}
}

func TestConflictBetweenSessions(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	k := open(t, clk, "")
	// The first session's write runs (notify in the working directory).
	if v := submit(t, k, sessionWrite("s1", "/proj/a.go")); !v.Level.RunsWithoutPerson() {
		t.Fatalf("first write: %s", v.Level)
	}
	// The same session again: no conflict.
	clk.Advance(time.Minute)
	if v := submit(t, k, sessionWrite("s1", "/proj/a.go")); !v.Level.RunsWithoutPerson() {
		t.Fatalf("same session: %s %+v", v.Level, v.Reasons)
	}
	// Another session, same file: held, naming the other session.
	clk.Advance(time.Minute)
	v := submit(t, k, sessionWrite("s2", "/proj/a.go"))
	if v.Level != action.Confirm || v.Decider == nil || v.Decider.Name != "conflicts.other-session" {
		t.Fatalf("second session: %s %+v", v.Level, v.Decider)
	}
	if v.Preview == nil || !strings.Contains(v.Preview.Summary, "claude-code session s1") || !strings.Contains(v.Preview.Summary, "wrote /proj/a.go 1m0s ago") {
		t.Fatalf("preview: %+v", v.Preview)
	}
	// A held call is not a touch: s1 is not held because of s2.
	if v := submit(t, k, sessionWrite("s1", "/proj/a.go")); !v.Level.RunsWithoutPerson() {
		t.Fatalf("s1 after s2 was only asked: %s %+v", v.Level, v.Reasons)
	}
	// Another file: no conflict.
	if v := submit(t, k, sessionWrite("s2", "/proj/b.go")); !v.Level.RunsWithoutPerson() {
		t.Fatalf("other file: %s %+v", v.Level, v.Reasons)
	}
	// A deletion of a directory covers what another session wrote below it.
	del := &action.Action{Agent: "codex", Session: "c1", Tool: "Bash", Cwd: "/proj", Args: map[string]any{"command": "rm -r /proj"}}
	if v := submit(t, k, del); v.Level < action.Confirm || !hasCheck(v, "conflicts.other-session") {
		t.Fatalf("delete of the tree: %s %+v", v.Level, v.Reasons)
	}
	cs, err := k.Conflicts(ctx)
	if err != nil || len(cs) != 0 {
		// s2's write of a.go was only asked about, so a.go has one session.
		t.Fatalf("current conflicts: %+v %v", cs, err)
	}
	// After the window, the touch is forgotten.
	clk.Advance(11 * time.Minute)
	if v := submit(t, k, sessionWrite("s2", "/proj/a.go")); !v.Level.RunsWithoutPerson() {
		t.Fatalf("after the window: %s %+v", v.Level, v.Reasons)
	}
	if n, err := k.PruneConflicts(ctx); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
}

func TestConflictsListed(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	k := open(t, clk, "")
	submit(t, k, sessionWrite("s1", "/proj/a.go"))
	sub, err := k.Submit(ctx, sessionWrite("s2", "/proj/a.go"))
	if err != nil || sub.Approval == nil {
		t.Fatalf("%+v %v", sub, err)
	}
	if _, _, err := k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "test"}); err != nil {
		t.Fatal(err)
	}
	cs, err := k.Conflicts(ctx)
	if err != nil || len(cs) != 1 || cs[0].Resource != "/proj/a.go" || len(cs[0].Touches) != 2 || cs[0].Touches[0].Session != "s2" {
		t.Fatalf("current conflicts: %+v %v", cs, err)
	}
}

func hasCheck(v action.Verdict, name string) bool {
	for _, r := range v.Reasons {
		if r.Name == name {
			return true
		}
	}
	return false
}
