package policy

import (
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/action"
)

// matchFile is the shape of testdata/match/*.yaml.
type matchFile struct {
	Policy string `yaml:"policy"`
	Cases  []struct {
		Name   string         `yaml:"name"`
		Action map[string]any `yaml:"action"`
		Want   string         `yaml:"want"`
		Error  bool           `yaml:"error"`
	} `yaml:"cases"`
}

// toAction converts a YAML action to an Action through JSON, as adapters do.
func toAction(t testing.TB, m map[string]any) *action.Action {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var a action.Action
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("action %s: %v", b, err)
	}
	return &a
}

func TestMatchTestdata(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "match", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no match cases: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var mf matchFile
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		dec.KnownFields(true)
		if err := dec.Decode(&mf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		p, err := Parse(f+":policy", []byte(mf.Policy), Options{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tc := range mf.Cases {
			t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml")+"/"+tc.Name, func(t *testing.T) {
				a := toAction(t, tc.Action)
				c, err := First(p.Rules, a)
				if tc.Error {
					var ee *EvalError
					if err == nil || !errors.Is(err, ErrEval) || !errors.As(err, &ee) {
						t.Fatalf("First = %v, %v; want an ErrEval", ruleName(c), err)
					}
					if c != nil {
						t.Errorf("First returned rule %q with its error", c.Name)
					}
					return
				}
				if err != nil {
					t.Fatalf("First: %v", err)
				}
				if got := ruleName(c); got != tc.Want {
					t.Errorf("First = %q, want %q", got, tc.Want)
				}
				// Matches agrees with First on the rule First chose.
				if c != nil {
					if ok, err := c.Matches(a); !ok || err != nil {
						t.Errorf("Matches = %v, %v", ok, err)
					}
				}
				// Trace ends on the same rule.
				steps := Trace(p.Rules, a)
				last := steps[len(steps)-1]
				if c != nil && (!last.Matched || last.Rule != c) {
					t.Errorf("Trace ends on %q matched=%v, want %q", last.Rule.Name, last.Matched, c.Name)
				}
				if c == nil && (len(steps) != len(p.Rules) || last.Matched) {
					t.Errorf("Trace has %d steps, want %d with no match", len(steps), len(p.Rules))
				}
			})
		}
	}
}

func ruleName(c *Compiled) string {
	if c == nil {
		return ""
	}
	return c.Name
}

func mustRules(t testing.TB, rules ...Rule) []*Compiled {
	t.Helper()
	cs, err := CompileRules(LayerUser, rules, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestMatchArgsHash(t *testing.T) {
	a := &action.Action{Tool: "Bash", Kind: action.KindShell, Cwd: "/p", Args: map[string]any{"command": "make deploy"}}
	rules := mustRules(t, Rule{Name: "once", ArgsHash: a.ArgsHash(), Level: action.Auto})
	tests := []struct {
		name string
		mut  func(*action.Action)
		want bool
	}{
		{"same call", func(*action.Action) {}, true},
		{"other session, same call", func(b *action.Action) { b.Session = "x" }, true},
		{"other argument", func(b *action.Action) { b.Args = map[string]any{"command": "make deploy "} }, false},
		{"other cwd", func(b *action.Action) { b.Cwd = "/q" }, false},
		{"other tool", func(b *action.Action) { b.Tool = "bash" }, false},
		{"other kind", func(b *action.Action) { b.Kind = action.KindOther }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := *a
			tc.mut(&b)
			ok, err := rules[0].Matches(&b)
			if err != nil || ok != tc.want {
				t.Errorf("Matches = %v, %v; want %v", ok, err, tc.want)
			}
		})
	}
}

func TestMatchSession(t *testing.T) {
	rules := mustRules(t, Rule{Name: "s", Session: "abc", Level: action.Auto})
	for _, tc := range []struct {
		session string
		want    bool
	}{{"abc", true}, {"ABC", false}, {"", false}, {"abcd", false}} {
		t.Run("session="+tc.session, func(t *testing.T) {
			ok, err := rules[0].Matches(&action.Action{Tool: "x", Session: tc.session})
			if err != nil || ok != tc.want {
				t.Errorf("Matches = %v, %v; want %v", ok, err, tc.want)
			}
		})
	}
}

func TestFirstEmpty(t *testing.T) {
	c, err := First(nil, &action.Action{Tool: "x"})
	if c != nil || err != nil {
		t.Errorf("First(nil) = %v, %v", c, err)
	}
}

func TestEvalErrorStopsFirst(t *testing.T) {
	rules := mustRules(t,
		Rule{Name: "broken", When: `args.n > 1`, Level: action.Auto},
		Rule{Name: "all", Level: action.Auto},
	)
	a := &action.Action{Tool: "x", Args: map[string]any{"n": "not a number"}}
	c, err := First(rules, a)
	var ee *EvalError
	if c != nil || !errors.As(err, &ee) || ee.Rule != "broken" || ee.Layer != LayerUser {
		t.Fatalf("First = %v, %v; want the broken rule's EvalError", ruleName(c), err)
	}
	if !strings.Contains(err.Error(), `user rule "broken"`) {
		t.Errorf("error text %q", err)
	}
	if ok, err := rules[0].Matches(a); ok || !errors.Is(err, ErrEval) {
		t.Errorf("Matches = %v, %v; want false and ErrEval", ok, err)
	}
}

func TestCostLimit(t *testing.T) {
	rules := mustRules(t, Rule{Name: "heavy", Level: action.Auto,
		When: `args.l.all(a, args.l.all(b, args.l.all(c, a + b + c >= 0)))`})
	l := make([]any, 200)
	for i := range l {
		l[i] = float64(i)
	}
	_, err := First(rules, &action.Action{Tool: "x", Args: map[string]any{"l": l}})
	if !errors.Is(err, ErrEval) {
		t.Errorf("err = %v, want ErrEval (cost limit)", err)
	}
}

func TestTrace(t *testing.T) {
	rules := mustRules(t,
		Rule{Name: "s", Session: "abc", Level: action.Auto},
		Rule{Name: "k", Kind: []action.Kind{action.KindSQL}, Level: action.Auto},
		Rule{Name: "t", Tool: []string{"Read", "Write"}, Level: action.Auto},
		Rule{Name: "a", Agent: []string{"codex"}, Level: action.Auto},
		Rule{Name: "h", ArgsHash: strings.Repeat("0", 64), Level: action.Auto},
		Rule{Name: "w", When: `args.command.startsWith("rm")`, Level: action.Auto},
		Rule{Name: "hit", Tool: []string{"bash"}, Level: action.Confirm},
		Rule{Name: "never-reached", Level: action.Block},
	)
	a := &action.Action{Tool: "Bash", Kind: action.KindShell, Agent: "claude-code", Args: map[string]any{"command": "ls"}}
	steps := Trace(rules, a)
	want := []struct{ rule, failed, detail string }{
		{"s", CondSession, `session "" is not "abc"`},
		{"k", CondKind, `kind "shell" is not one of ["sql"]`},
		{"t", CondTool, `tool "Bash" matches none of ["Read", "Write"]`},
		{"a", CondAgent, `agent "claude-code" matches none of ["codex"]`},
		{"h", CondArgsHash, "the arguments differ from the ones the rule was made for"},
		{"w", CondWhen, `when args.command.startsWith("rm") is false`},
		{"hit", "", "matched"},
	}
	if len(steps) != len(want) {
		t.Fatalf("got %d steps, want %d (it must stop after the first match)", len(steps), len(want))
	}
	for i, w := range want {
		t.Run(w.rule, func(t *testing.T) {
			st := steps[i]
			if st.Rule.Name != w.rule || st.Failed != w.failed || st.Detail != w.detail || st.Err != nil {
				t.Errorf("step = {%s %q %q %v}, want {%s %q %q}", st.Rule.Name, st.Failed, st.Detail, st.Err, w.rule, w.failed, w.detail)
			}
			if st.Matched != (w.failed == "") {
				t.Errorf("Matched = %v", st.Matched)
			}
		})
	}
	t.Run("stops at an error", func(t *testing.T) {
		b := &action.Action{Tool: "Bash", Kind: action.KindShell, Agent: "claude-code", Args: map[string]any{}}
		steps := Trace(rules, b)
		last := steps[len(steps)-1]
		if last.Rule.Name != "w" || last.Err == nil || last.Matched || !errors.Is(last.Err, ErrEval) {
			t.Errorf("last step = %+v, want rule w with an error", last)
		}
	})
}

func TestCELCompile(t *testing.T) {
	tests := []struct {
		name, when string
		ok         bool
	}{
		{"bool", `tool == "Bash"`, true},
		{"all variables", `tool + kind + agent + session + cwd + intent != "" && confidence < 1.0 && size(args) >= 0 && size(facts) > 0`, true},
		{"strings ext", `tool.lowerAscii().replace("a", "b").indexOf("b") >= 0`, true},
		{"glob", `glob("mcp__*", tool)`, true},
		{"glob arity", `glob("x")`, false},
		{"int", `1 + 2`, false},
		{"dyn", `args.x`, false},
		{"unknown function", `frobnicate(tool)`, false},
		{"syntax", `tool ==`, false},
		{"cross-type ordering", `confidence < 1 && confidence >= 0`, true},
		{"mixed equality", `confidence == 1`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compileCEL(tc.when)
			if (err == nil) != tc.ok {
				t.Errorf("compileCEL(%q) err = %v, want ok=%v", tc.when, err, tc.ok)
			}
		})
	}
}

func TestGlobFunctionBadPattern(t *testing.T) {
	rules := mustRules(t, Rule{Name: "g", When: `glob(args.p, tool)`, Level: action.Auto})
	_, err := First(rules, &action.Action{Tool: "x", Args: map[string]any{"p": "["}})
	if !errors.Is(err, ErrEval) {
		t.Errorf("err = %v, want ErrEval", err)
	}
}

// TestConcurrentMatching runs First from several goroutines on one policy;
// with -race it shows compiled rules are safe to share.
func TestConcurrentMatching(t *testing.T) {
	p := Builtin()
	done := make(chan error)
	for i := range 4 {
		go func() {
			var err error
			for j := range 200 {
				a := &action.Action{Tool: "Bash", Kind: action.KindShell, Args: map[string]any{"command": "git push"},
					Facts: action.Facts{Commands: []action.Command{{Name: "git", Args: []string{"push", string(rune('a' + (i+j)%26))}}}}}
				c, e := First(p.Rules, a)
				if e != nil || c == nil || c.Name != "builtin-git-push" {
					err = errors.Join(err, e)
				}
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestGlobShapes checks the fast paths of glob against path.Match.
func TestGlobShapes(t *testing.T) {
	patterns := []string{"bash", "Bash", "mcp__github__*", "*_file", "*", "**", "a*b", "*mid*", "b?sh", "[bc]ash", `\*lit`, "x/*", "*/y", ""}
	names := []string{"bash", "BASH", "mcp__github__create", "mcp__github__", "mcp__gitlab__x", "read_file", "_file", "file",
		"", "ab", "axxb", "amidb", "mid", "bosh", "cash", "*lit", "x/y", "x/y/z", "a/y", "a/b/y", "mcp__github__a/b"}
	for _, p := range patterns {
		g, err := compileGlob(p)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", p, err)
		}
		for _, n := range names {
			ln := strings.ToLower(n)
			want, _ := path.Match(strings.ToLower(p), ln)
			if got := g.match(ln); got != want {
				t.Errorf("glob %q (shape %d) on %q = %v, path.Match says %v", p, g.shape, n, got, want)
			}
		}
	}
}

func TestUnhashableArgsNeverMatchAHashRule(t *testing.T) {
	bad := &action.Action{Tool: "x", Args: map[string]any{"f": func() {}}}
	h := bad.ArgsHash()
	if !strings.HasPrefix(h, "unhashable:") {
		t.Fatalf("hash %q", h)
	}
	c := &Compiled{Rule: Rule{Name: "r", ArgsHash: h, Level: action.Auto}, Layer: LayerUser}
	if ok, err := c.Matches(bad); ok || err != nil {
		t.Errorf("Matches = %v, %v; want no match", ok, err)
	}
	if _, err := CompileRules(LayerUser, []Rule{c.Rule}, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("CompileRules accepted args_hash %q", h)
	}
}

func TestSkipExamples(t *testing.T) {
	r := Rule{Name: "r", Tool: []string{"Bash"}, Level: action.Auto, Match: []Example{{Tool: "Read"}}}
	if _, err := CompileRules(LayerUser, []Rule{r}, Options{}); !errors.Is(err, ErrExample) {
		t.Fatalf("err = %v, want ErrExample", err)
	}
	if _, err := CompileRules(LayerUser, []Rule{r}, Options{SkipExamples: true}); err != nil {
		t.Errorf("SkipExamples: %v", err)
	}
	if _, err := Parse("p.yaml", []byte("rules: [{name: r, tool: Bash, level: auto, match: [{tool: Read}]}]\n"), Options{SkipExamples: true}); err != nil {
		t.Errorf("Parse with SkipExamples: %v", err)
	}
}
