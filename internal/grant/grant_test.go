package grant

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

func docs() *Grant {
	return &Grant{ID: "g1", IssuedBy: "alice", Spec: Spec{
		Subject: Subject{Agent: "claude-code", Session: "s1", SubagentType: "general-purpose"},
		Allow:   []Permit{{Kinds: []action.Kind{action.KindFileRead}, Under: []string{"/p/docs"}, ReadOnly: true}},
		Budget:  Budget{Steps: 2, WallTime: Duration(time.Hour)},
		Expires: t0.Add(2 * time.Hour),
	}}
}

func call(tool string, kind action.Kind, paths ...action.PathFact) *action.Action {
	return &action.Action{Agent: "claude-code", Session: "s1", SubagentID: "x", SubagentType: "general-purpose",
		Tool: tool, Kind: kind, Facts: action.Facts{Paths: paths}}
}

func read(p string) action.PathFact { return action.PathFact{Path: p, Intent: action.PathRead} }

func TestSubjectMatches(t *testing.T) {
	a := call("Read", action.KindFileRead)
	main := *a
	main.SubagentID, main.SubagentType = "", ""
	for _, c := range []struct {
		name string
		s    Subject
		a    *action.Action
		want bool
	}{
		{"type", Subject{Agent: "claude-code", SubagentType: "general-purpose"}, a, true},
		{"any sub-agent", Subject{Agent: "claude-code", SubagentType: "*"}, a, true},
		{"main only", Subject{Agent: "claude-code"}, a, false},
		{"main", Subject{Agent: "claude-code"}, &main, true},
		{"any sub-agent is not main", Subject{Agent: "claude-code", SubagentType: "*"}, &main, false},
		{"other type", Subject{Agent: "claude-code", SubagentType: "Explore"}, a, false},
		{"other agent", Subject{Agent: "codex", SubagentType: "*"}, a, false},
		{"other session", Subject{Agent: "claude-code", Session: "s2", SubagentType: "*"}, a, false},
		{"id", Subject{Agent: "claude-code", SubagentType: "*", SubagentID: "x"}, a, true},
		{"other id", Subject{Agent: "claude-code", SubagentType: "*", SubagentID: "y"}, a, false},
		{"empty agent", Subject{}, &action.Action{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.s.Matches(c.a); got != c.want {
				t.Fatalf("%+v matches %+v: %v", c.s, c.a, got)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	st := func(g *Grant, u Usage) []State { return []State{{Grant: g, Usage: u}} }
	revoked := docs()
	revoked.Revoked = &Revocation{By: "bob", At: t0}
	netg := docs()
	netg.Allow = []Permit{{Kinds: []action.Kind{action.KindNetFetch}, Hosts: []string{"example.org"}}}
	fetch := func(u string) *action.Action {
		a := call("WebFetch", action.KindNetFetch)
		a.Facts.URLs = []string{u}
		return a
	}
	for _, c := range []struct {
		name   string
		states []State
		a      *action.Action
		now    time.Time
		inside bool
		edge   string
	}{
		{"inside", st(docs(), Usage{}), call("Read", action.KindFileRead, read("/p/docs/a.md")), t0, true, ""},
		{"outside dir", st(docs(), Usage{}), call("Read", action.KindFileRead, read("/p/src/a.go")), t0, false, "not under /p/docs"},
		{"sibling prefix", st(docs(), Usage{}), call("Read", action.KindFileRead, read("/p/docs-old/a")), t0, false, "not under"},
		{"kind", st(docs(), Usage{}), call("Write", action.KindFileWrite, action.PathFact{Path: "/p/docs/a", Intent: action.PathWrite}), t0, false, "kind file_write"},
		{"steps", st(docs(), Usage{Steps: 2}), call("Read", action.KindFileRead, read("/p/docs/a.md")), t0, false, "budget of 2 steps"},
		{"wall time", st(docs(), Usage{Steps: 1, First: t0}), call("Read", action.KindFileRead, read("/p/docs/a.md")), t0.Add(time.Hour), false, "wall time"},
		{"expired", st(docs(), Usage{}), call("Read", action.KindFileRead, read("/p/docs/a.md")), t0.Add(3 * time.Hour), false, "expired"},
		{"revoked", st(revoked, Usage{}), call("Read", action.KindFileRead, read("/p/docs/a.md")), t0, false, "revoked by bob"},
		{"forgotten", st(docs(), Usage{}), call("Read", action.KindFileRead, read("/p/docs/a.md")), t0.Add(Remembered + 3*time.Hour), false, ""},
		{"parent spent", []State{{Grant: docs(), Ancestors: []State{{Grant: &Grant{ID: "p", Spec: Spec{Budget: Budget{Steps: 1}, Expires: t0.Add(time.Hour)}}, Usage: Usage{Steps: 1}}}}},
			call("Read", action.KindFileRead, read("/p/docs/a.md")), t0, false, "its parent grant p has used"},
		{"host listed", st(netg, Usage{}), fetch("https://Example.org/x"), t0, true, ""},
		{"host not listed", st(netg, Usage{}), fetch("https://evil.example/x"), t0, false, "does not list"},
		{"not the subject", st(docs(), Usage{}), &action.Action{Agent: "claude-code", Session: "s1", Tool: "Read", Kind: action.KindFileRead}, t0, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := Judge(c.states, c.a, c.now, false)
			if (o.Inside != nil) != c.inside {
				t.Fatalf("inside %v, want %v (edge %q)", o.Inside != nil, c.inside, o.Edge)
			}
			if c.edge == "" && o.Edge != "" || !strings.Contains(o.Edge, c.edge) {
				t.Fatalf("edge %q, want %q", o.Edge, c.edge)
			}
		})
	}
}

func TestReadOnlyShell(t *testing.T) {
	g := docs()
	g.Allow[0].Kinds = []action.Kind{action.KindShell}
	sh := call("Bash", action.KindShell, read("/p/docs/a.md"))
	if o := Judge([]State{{Grant: g}}, sh, t0, true); o.Inside == nil {
		t.Fatalf("read-only command: %q", o.Edge)
	}
	if o := Judge([]State{{Grant: g}}, sh, t0, false); o.Inside != nil {
		t.Fatal("a command the guards do not know as read-only is inside a read-only grant")
	}
	sh.Facts.Paths = append(sh.Facts.Paths, action.PathFact{Path: "/p/docs/b", Intent: action.PathUnknown})
	if o := Judge([]State{{Grant: g}}, sh, t0, true); o.Inside != nil {
		t.Fatal("a path of unknown effect is inside a read-only grant")
	}
}

func TestPatternCovers(t *testing.T) {
	for _, c := range []struct {
		parent, child string
		want          bool
	}{
		{"*", "Read", true}, {"*", "mcp__*", true}, {"Read", "Read", true}, {"mcp__fs__*", "mcp__fs__read", true},
		{"a?c", "a*c", false}, {"mcp__fs__*", "mcp__*", false}, {"Read", "Re*", false}, {"Re[", "Re[", true},
	} {
		if got := patternCovers(c.parent, c.child); got != c.want {
			t.Errorf("%q covers %q: %v", c.parent, c.child, got)
		}
	}
}

// FuzzSpec decodes a spec as the API and the CLI receive it, validates it
// and judges a call against it: nothing panics, a valid spec is within
// itself, and a grant never lets a call through outside its subject.
func FuzzSpec(f *testing.F) {
	seed, _ := json.Marshal(docs().Spec)
	f.Add(seed, "Read", "/p/docs/a.md")
	f.Add([]byte(`{"subject":{"agent":"codex"},"allow":[{"tools":["*"],"under":["/"]}],"expires":"2026-11-01T11:00:00Z"}`), "Bash", "/etc/passwd")
	f.Add([]byte(`{"subject":{"agent":"a","subagent_type":"*"},"allow":[{"tools":["a?c","[z"],"hosts":["x"]}],"budget":{"steps":1},"expires":"2026-11-01T11:00:00Z"}`), "abc", "")
	f.Fuzz(func(t *testing.T, data []byte, tool, p string) {
		var s Spec
		if json.Unmarshal(data, &s) != nil || s.Validate(t0) != nil {
			return
		}
		g := &Grant{ID: "g", Spec: s}
		if err := Within(&s, g, Usage{}); err != nil {
			t.Fatalf("a spec is not within itself: %v", err)
		}
		a := &action.Action{Agent: s.Subject.Agent + "x", Tool: tool, Kind: action.KindFileRead,
			Facts: action.Facts{Paths: []action.PathFact{read(p)}}}
		if o := Judge([]State{{Grant: g}}, a, t0, false); o.Under() {
			t.Fatal("judged under a grant of another agent")
		}
		a.Agent, a.Session = s.Subject.Agent, s.Subject.Session
		a.SubagentType, a.SubagentID = s.Subject.SubagentType, s.Subject.SubagentID
		if s.Subject.SubagentType == "*" {
			a.SubagentType = "t"
		}
		rv := *g
		rv.Revoked = &Revocation{By: "b", At: t0}
		if o := Judge([]State{{Grant: &rv}}, a, t0, false); o.Inside != nil || !o.Under() {
			t.Fatalf("a revoked grant: %+v", o)
		}
		if o := Judge([]State{{Grant: g, Usage: Usage{Steps: s.Budget.Steps}}}, a, t0, false); s.Budget.Steps > 0 && o.Inside != nil {
			t.Fatal("a spent grant lets a call through")
		}
		if o := Judge([]State{{Grant: g}}, a, s.Expires, false); o.Inside != nil {
			t.Fatal("an expired grant lets a call through")
		}
	})
}
