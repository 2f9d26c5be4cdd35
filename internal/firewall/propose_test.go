package firewall

import (
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/policy"
)

// past builds a past shell call with the facts the shell guard would give.
func past(cmd, answer string, paths ...action.PathFact) PastAction {
	f := strings.Fields(cmd)
	a := action.Action{Tool: "Bash", Kind: action.KindShell, Agent: "claude-code", Cwd: "/work/app",
		Args:  map[string]any{"command": cmd},
		Facts: action.Facts{Commands: []action.Command{{Name: f[0], Args: f[1:]}}, Paths: paths}}
	return PastAction{Action: a, Asked: true, Answer: answer, Who: "ann"}
}

func matches(t *testing.T, r policy.Rule, p PastAction) bool {
	t.Helper()
	c, err := policy.CompileRules(policy.LayerUser, []policy.Rule{r}, policy.Options{SkipExamples: true})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := c[0].Matches(&p.Action)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestProposeShapes(t *testing.T) {
	for _, c := range []struct {
		name     string
		approved []string
		want     string // a fragment of the title; "" for no proposal
		match    []string
		noMatch  []string
	}{
		{name: "names", approved: []string{"npm install lodash", "npm install express", "npm install left-pad"},
			want: "npm install <name>", match: []string{"npm install chalk", "npm install a b"},
			noMatch: []string{"npm install @x/y", "npm install x@1", "npm install", "npm ci", "npm install a:b"}},
		{name: "scoped and versioned", approved: []string{"npm install @types/node", "npm install react@18.2.0", "npm install vue"},
			want: "<name> | <@scope/name> | <name@version>", match: []string{"npm install @babel/core", "npm install lodash@4"},
			noMatch: []string{"npm install user/repo", "npm install github:user/repo"}},
		{name: "one value stays literal", approved: []string{"make build", "make build", "make build"},
			want: "make build in", match: []string{"make build"}, noMatch: []string{"make install", "make build x"}},
		{name: "required and optional options", approved: []string{"npm install -D a", "npm install -D b --silent", "npm install -D c"},
			want: "[--silent -D]", match: []string{"npm install -D x", "npm install -D --silent x"},
			noMatch: []string{"npm install x", "npm install -D -g x"}},
		{name: "a bare program", approved: []string{"mytool alpha", "mytool beta", "mytool gamma"}},
		{name: "too few", approved: []string{"npm install a", "npm install b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ps []PastAction
			for _, a := range c.approved {
				ps = append(ps, past(a, "approve"))
			}
			got := Propose(ps, 3)
			if c.want == "" {
				if len(got) != 0 {
					t.Fatalf("want no proposal, got %s", got[0].Rule.When)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Title, c.want) {
				t.Fatalf("want one proposal titled %q, got %+v", c.want, got)
			}
			r := got[0].Rule
			if r.Level != action.Auto || len(r.Match) != len(c.approved) || !strings.HasPrefix(r.Name, LearnedPrefix) {
				t.Fatalf("rule %+v", r)
			}
			for _, m := range c.match {
				if !matches(t, r, past(m, "")) {
					t.Errorf("%q: no match\n%s", m, r.When)
				}
			}
			for _, m := range c.noMatch {
				if matches(t, r, past(m, "")) {
					t.Errorf("%q: match\n%s", m, r.When)
				}
			}
		})
	}
}

func TestProposeRefusals(t *testing.T) {
	ps := []PastAction{past("npm install lodash", "approve"), past("npm install git+https://x.test/y.git", "deny"),
		past("npm install express", "approve"), past("npm install left-pad", "approve")}
	got := Propose(ps, 3)
	if len(got) != 1 || len(got[0].Rule.NotMatch) != 1 || len(got[0].Refusals) != 1 {
		t.Fatalf("a refusal of another shape is a not_match example: %+v", got)
	}
	ps = append(ps, past("npm install evil", "deny"))
	if got := Propose(ps, 3); len(got) != 0 {
		t.Fatalf("a refusal like the approvals: no proposal, got %s", got[0].Rule.When)
	}
	// A refusal elsewhere (another working directory) does not count.
	other := past("npm install evil", "deny")
	other.Action.Cwd = "/work/other"
	if got := Propose(append(ps[:4:4], other), 3); len(got) != 1 {
		t.Fatalf("a refusal in another directory: %d proposals", len(got))
	}
}

func TestProposePaths(t *testing.T) {
	del := func(p string) action.PathFact {
		return action.PathFact{Path: p, Intent: action.PathDelete, InCwd: true}
	}
	ps := []PastAction{
		past("mytool clean build/a", "approve", del("/work/app/build/a")),
		past("mytool clean build/b", "approve", del("/work/app/build/b")),
		past("mytool clean build/c/d", "approve", del("/work/app/build/c/d")),
	}
	got := Propose(ps, 3)
	if len(got) != 1 || !strings.Contains(got[0].Title, "<path under /work/app/build>") {
		t.Fatalf("%+v", got)
	}
	r := got[0].Rule
	if !matches(t, r, past("mytool clean build/x", "", del("/work/app/build/x"))) {
		t.Errorf("a path under the directory: no match\n%s", r.When)
	}
	if matches(t, r, past("mytool clean src", "", del("/work/app/src"))) {
		t.Errorf("a path outside the directory: match")
	}
	if matches(t, r, past("mytool clean build/x", "", action.PathFact{Path: "/work/app/build/x", Intent: action.PathWrite})) {
		t.Errorf("another intent: match")
	}
	// Paths under a home directory itself are too broad to learn.
	ps = []PastAction{
		past("mytool clean a", "approve", del("/home/ann/a")),
		past("mytool clean b", "approve", del("/home/ann/b")),
		past("mytool clean c", "approve", del("/home/ann/c")),
	}
	if got := Propose(ps, 3); len(got) != 0 {
		t.Fatalf("under a home directory: %s", got[0].Rule.When)
	}
}

func TestProposeIneligibleCalls(t *testing.T) {
	var ps []PastAction
	for _, cmd := range []string{"sudo npm install a", "sudo npm install b", "sudo npm install c"} {
		p := past(cmd, "approve")
		p.Action.Facts.Commands = []action.Command{{Name: "npm", Args: strings.Fields(cmd)[2:]}} // unwrapped by the guard
		ps = append(ps, p)
	}
	if got := Propose(ps, 3); len(got) != 0 {
		t.Fatalf("calls through a wrapper: %s", got[0].Rule.When)
	}
	ps = nil
	for range 3 {
		p := past("npm install x && npm test", "approve")
		p.Action.Facts.Commands = append(p.Action.Facts.Commands, action.Command{Name: "npm", Args: []string{"test"}})
		ps = append(ps, p)
	}
	if got := Propose(ps, 3); len(got) != 0 {
		t.Fatalf("compound lines: %s", got[0].Rule.When)
	}
}
