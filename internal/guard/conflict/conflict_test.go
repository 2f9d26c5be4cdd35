package conflict

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

func newGuard(t *testing.T, p Policy) (*Guard, *clock.Fake) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "o.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := clock.NewFake(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	return New(p, st, clk), clk
}

func TestResources(t *testing.T) {
	ctx := context.Background()
	g, clk := newGuard(t, Policy{Window: "5m", Level: action.Approve})
	push := func(session string) *action.Action {
		return &action.Action{Agent: "codex", Session: session, Tool: "Bash", Kind: action.KindShell, Cwd: "/repo",
			Facts: action.Facts{Commands: []action.Command{{Name: "git", Args: []string{"push", "-f", "upstream", "main"}}}}}
	}
	post := func(session, method string) *action.Action {
		return &action.Action{Agent: "claude-code", Session: session, Tool: "WebFetch", Kind: action.KindNetFetch,
			Args: map[string]any{"url": "https://api.example.com/v1/items", "method": method}}
	}
	for _, a := range []*action.Action{push("s1"), post("s1", "POST")} {
		if err := g.Observe(ctx, a, action.Auto, false); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Minute)
	for _, c := range []struct {
		name string
		a    *action.Action
		want string
	}{
		{"git push to the same remote", push("s2"), "git push /repo upstream"},
		{"a send to the same API", post("s2", "PUT"), "remote api.example.com"},
		{"a GET sends nothing", post("s2", "GET"), ""},
		{"the same session", push("s1"), ""},
		{"no session", push(""), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs, err := g.Check(ctx, c.a)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if len(fs) != 0 {
					t.Fatalf("findings %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Level != action.Approve || !fs[0].Hard || !strings.Contains(fs[0].Message, c.want) ||
				!strings.Contains(fs[0].Preview.Summary, "session s1") {
				t.Fatalf("findings %+v", fs)
			}
		})
	}
	// A call only asked about, and a blocked one, are not touches.
	if err := g.Observe(ctx, post("s3", "DELETE"), action.Confirm, false); err != nil {
		t.Fatal(err)
	}
	if fs, _ := g.Check(ctx, post("s1", "POST")); len(fs) != 0 {
		t.Fatalf("an unanswered request counted: %+v", fs)
	}
	clk.Advance(5 * time.Minute)
	if fs, _ := g.Check(ctx, push("s2")); len(fs) != 0 {
		t.Fatalf("after the window: %+v", fs)
	}
}

func TestPolicy(t *testing.T) {
	for _, p := range []Policy{{Window: "soon"}, {Window: "-1m"}, {Level: action.Notify}, {Level: action.Auto}} {
		if p.Validate() == nil {
			t.Errorf("%+v is valid", p)
		}
	}
	if err := (Policy{Window: "1h", Level: action.Block}).Validate(); err != nil {
		t.Fatal(err)
	}
	g, _ := newGuard(t, Policy{Off: true})
	a := &action.Action{Agent: "a", Session: "s", Facts: action.Facts{Paths: []action.PathFact{{Path: "/x", Intent: action.PathWrite}}}}
	if err := g.Observe(context.Background(), a, action.Auto, false); err != nil {
		t.Fatal(err)
	}
	a.Session = "t"
	if fs, err := g.Check(context.Background(), a); err != nil || len(fs) != 0 {
		t.Fatalf("off: %+v %v", fs, err)
	}
}

// A conflict with Overseer's own loop names the task.
func TestConflictNamesTask(t *testing.T) {
	ctx := context.Background()
	g, _ := newGuard(t, Policy{})
	w := func(agent, s string) *action.Action {
		return &action.Action{Agent: agent, Session: s, Tool: "file_write", Facts: action.Facts{Paths: []action.PathFact{{Path: "/p/x.go", Intent: action.PathWrite}}}}
	}
	if err := g.Observe(ctx, w("overseer", "t_abc"), action.Notify, false); err != nil {
		t.Fatal(err)
	}
	fs, err := g.Check(ctx, w("codex", "s1"))
	if err != nil || len(fs) != 1 || !strings.Contains(fs[0].Preview.Summary, "Overseer task t_abc") {
		t.Fatalf("findings %+v %v", fs, err)
	}
}

// A touch record that cannot be read is an error: the engine then puts
// the call to a person (fails closed).
func TestUnreadableTouches(t *testing.T) {
	ctx := context.Background()
	g, _ := newGuard(t, Policy{})
	if err := g.st.UpdateState(ctx, Namespace, "/x", func([]byte) ([]byte, error) { return []byte(`{"not":"a list"}`), nil }); err != nil {
		t.Fatal(err)
	}
	a := &action.Action{Agent: "a", Session: "s", Facts: action.Facts{Paths: []action.PathFact{{Path: "/x", Intent: action.PathWrite}}}}
	if _, err := g.Check(ctx, a); err == nil {
		t.Fatal("no error")
	}
}

// BenchmarkCheckWrite is what the conflict guard adds to the Evaluate of a
// write: one store read per path written (SQLite), with another session's
// touch to find.
func BenchmarkCheckWrite(b *testing.B) {
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "o.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	g := New(Policy{}, st, nil)
	ctx := context.Background()
	w := func(s string) *action.Action {
		return &action.Action{Agent: "a", Session: s, Facts: action.Facts{Paths: []action.PathFact{{Path: "/p/x.go", Intent: action.PathWrite}}}}
	}
	if err := g.Observe(ctx, w("s1"), action.Auto, false); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for range b.N {
		if fs, err := g.Check(ctx, w("s2")); err != nil || len(fs) != 1 {
			b.Fatal(fs, err)
		}
	}
}
