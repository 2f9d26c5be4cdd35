package egress

import (
	"context"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

// countingState is a real SQLite store that counts its state writes.
type countingState struct {
	store.StateStore
	writes atomic.Int32
}

func (c *countingState) UpdateState(ctx context.Context, ns, key string, fn func([]byte) ([]byte, error)) error {
	c.writes.Add(1)
	return c.StateStore.UpdateState(ctx, ns, key, fn)
}

// TestObserveWritesOnlyChanges: the session memory is written when an
// action adds to it (a new destination, a destination a person cleared,
// a secret read), and not for an action that sends where the session sent
// before — with the memory Check read for the action, or read again
// without it.
func TestObserveWritesOnlyChanges(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := &countingState{StateStore: db}
	home := t.TempDir()
	secret := filepath.Join(home, ".aws", "credentials")
	isSecret := func(p string) (string, bool) { return "~/.aws", p == secret }
	g := newGuard(t, Policy{}, Env{Home: t.TempDir(), Store: st, SecretPath: isSecret})
	ctx := context.Background()
	n := 0
	call := func(session string) *action.Action {
		n++
		return &action.Action{ID: "act_" + string(rune('a'+n)), Tool: "mcp__slack__post_message", Kind: action.KindMCP,
			Agent: "client", Session: session, Args: map[string]any{"text": "hi"}}
	}
	run := func(name string, a *action.Action, checked bool, level action.Level, answered bool, want int32) {
		t.Helper()
		if checked {
			if _, err := g.Check(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		before := st.writes.Load()
		if err := g.Observe(ctx, a, level, answered); err != nil {
			t.Fatal(err)
		}
		if got := st.writes.Load() - before; got != want {
			t.Errorf("%s: %d writes, want %d", name, got, want)
		}
	}
	run("a first send", call("s1"), true, action.Auto, false, 1)
	run("the same destination, checked", call("s1"), true, action.Auto, false, 0)
	run("the same destination, not checked", call("s1"), false, action.Auto, false, 0)
	run("another session", call("s2"), true, action.Auto, false, 1)
	run("cleared by a person", call("s1"), true, action.Approve, true, 1)
	run("cleared again", call("s1"), true, action.Approve, true, 0)
	// Check read s1 for this action id; observed under another session,
	// that memory is not taken for the other session's.
	a := call("s1")
	if _, err := g.Check(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.Session = "s3"
	run("another session under the checked id", a, false, action.Auto, false, 1)
	// A secret read is recorded every time (its time and values are new).
	read := func() *action.Action {
		r := call("s1")
		r.Tool, r.Kind, r.Args = "Read", action.KindFileRead, map[string]any{"file_path": secret}
		r.Facts.Paths = []action.PathFact{{Path: secret, Intent: action.PathRead}}
		return r
	}
	run("a secret read", read(), true, action.Auto, false, 1)
	run("the same secret read again", read(), true, action.Auto, false, 1)

	for session, want := range map[string]Memory{
		"s1": {Dests: []string{"mcp server slack"}, Cleared: []string{"mcp server slack"}},
		"s2": {Dests: []string{"mcp server slack"}},
		"s3": {Dests: []string{"mcp server slack"}},
	} {
		m, err := load(ctx, db, sessionKey("client", session))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(m.Dests, want.Dests) || !slices.Equal(m.Cleared, want.Cleared) {
			t.Errorf("%s: memory %+v, want %+v", session, m, want)
		}
		if session == "s1" && (len(m.Reads) != 1 || m.Reads[0].Path != secret) {
			t.Errorf("s1: reads %+v, want the one secret file", m.Reads)
		}
	}
}

// TestCheckedMemoriesBounded: memories Check read for actions never
// observed (blocked ones) do not pile up.
func TestCheckedMemoriesBounded(t *testing.T) {
	g := newGuard(t, Policy{}, Env{})
	for i := 0; i < 3*maxChecked; i++ {
		g.rememberChecked("act_"+string(rune(i)), "k", Memory{})
	}
	if n := len(g.checked); n > maxChecked {
		t.Fatalf("%d memories kept, at most %d", n, maxChecked)
	}
	g.rememberChecked("act_x", "k", Memory{Dests: []string{"d"}})
	if m := g.takeChecked("act_x", "k"); m == nil || len(m.Dests) != 1 {
		t.Fatalf("took %+v", m)
	}
	if m := g.takeChecked("act_x", "k"); m != nil {
		t.Fatalf("taken twice: %+v", m)
	}
}
