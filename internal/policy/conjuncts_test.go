package policy

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"testing"

	"cel.dev/cel-go/common/types"

	"github.com/overseer-dev/overseer/internal/action"
)

// firstExhaustive is First without any shortcut: every rule is matched in
// order with a fresh activation, and a condition that gets that far is
// evaluated in CEL in full (no command-name prefilter, no conjunct tests).
// It is the reference First and Trace must agree with.
func firstExhaustive(rules []*Compiled, a *action.Action) (*Compiled, error) {
	for _, c := range rules {
		ok, err := matchExhaustive(c, a)
		if err != nil {
			return nil, err
		}
		if ok {
			return c, nil
		}
	}
	return nil, nil
}

// matchExhaustive is Compiled.match without shortcuts.
func matchExhaustive(c *Compiled, a *action.Action) (bool, error) {
	plain := *c
	plain.lazyCond = nil
	cond, err := c.condition()
	if err == nil && cond != nil {
		p := *cond
		p.commands, p.tests = nil, nil
		plain.cond = &p
	} else {
		plain.cond = nil
		if err != nil {
			plain.lazyCond = func() (*celProgram, error) { return nil, err }
		}
	}
	s := newSubject(a)
	defer s.close()
	ok, _, err := plain.match(s)
	return ok, err
}

func TestConjunctTestsExtraction(t *testing.T) {
	tests := []struct {
		when string
		n    int
	}{
		{`has(args.command) && args.command.startsWith("git push")`, 2},
		{`"command" in args && args["command"].endsWith(".sh")`, 2},
		{`args.command.contains("x") && args.command.matches("^a+b")`, 2},
		{`args.command.matches("(")`, 0}, // not valid RE2: CEL refuses it anyway
		{`args.method in ["POST", "PUT"] && args.method != "GET" && "x" == args.y`, 3},
		{`tool == "Bash" && kind == "shell" && agent.startsWith("c") && session != "" && cwd.endsWith("/p") && intent.contains("x")`, 6},
		{`facts.sql_class == "ddl"`, 1},
		{`confidence >= 0.0 && confidence < 0.3 && 0.9 > confidence && 0.1 <= confidence`, 4},
		{`confidence < 1`, 0},                              // an int literal: left to CEL
		{`args.command.startsWith(tool)`, 0},               // not a literal
		{`args.command.size() > 3`, 0},                     // not a shape it knows
		{`args.command.startsWith("a") || tool == "x"`, 0}, // under an or
		{`!args.command.startsWith("a")`, 0},
		{`args.opts.depth == "x"`, 0}, // nested
		{`facts.commands.exists(c, c.name == "git") && args.command.contains("push")`, 1},
		{`facts.paths.exists(p, p.path.startsWith("/etc/"))`, 1},
		{`facts.paths.exists(p, p.intent == "delete" && !p.in_cwd && !p.created)`, 1},
		{`facts.paths.exists(p, p.in_cwd || p.created)`, 0},
		{`facts.paths.exists(p, p.path.size() > 3 && p.created)`, 1},
		{`facts.paths.exists(p, !p.path.startsWith("/"))`, 0},
		{`facts.paths.all(p, p.path.startsWith("/etc/"))`, 0},
		{`facts.paths.exists_one(p, p.path.startsWith("/etc/"))`, 0},
		{`facts.urls.exists(u, u.matches("^https?://x") && u != "")`, 1},
		{`facts.urls.exists(u, tool.startsWith("x"))`, 0},
		{`facts.notes.exists(n, n == "x")`, 0},
		{`[tool].exists(t, t == "x")`, 0},
		// Two comprehensions: the program tracks its cost, and gets no tests.
		{`args.command.contains("push") && facts.paths.all(p, p.in_cwd) && facts.urls.all(u, u != "")`, 0},
	}
	for _, tc := range tests {
		p, err := compileCEL(tc.when)
		if err != nil {
			if tc.n == 0 {
				continue
			}
			t.Fatalf("%s: %v", tc.when, err)
		}
		if len(p.tests) != tc.n {
			t.Errorf("%s: %d tests, want %d", tc.when, len(p.tests), tc.n)
		}
	}
}

func TestRegexLiterals(t *testing.T) {
	tests := []struct {
		pattern string
		want    []litReq
	}{
		{`^git\s+push\b`, []litReq{{true, []string{"git"}}, {false, []string{"push"}}}},
		{`^(npm|yarn|pnpm)\s+publish\b`, []litReq{{true, []string{"npm", "yarn", "pnpm"}}, {false, []string{"publish"}}}},
		{`\brm\s+-rf`, []litReq{{false, []string{"rm"}}, {false, []string{"-rf"}}}},
		{`^git\s+(switch|stash)\b`, []litReq{{true, []string{"git"}}, {false, []string{"switch", "stash"}}}},
		{`(?i)^drop\s+table`, nil},
		{`^(sudo\s+)?reboot`, []litReq{{false, []string{"reboot"}}}},
		{`^a*b`, []litReq{{false, []string{"b"}}}},
		{`(?m)^git`, []litReq{{false, []string{"git"}}}},
		{`xa|yb`, []litReq{{false, []string{"xa", "yb"}}}},
		{`x|y`, nil}, // a character class
		{`a?`, nil},
		{`[ab]c`, []litReq{{false, []string{"c"}}}},
		{`(`, nil},
	}
	for _, tc := range tests {
		if got := regexLiterals(tc.pattern); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("regexLiterals(%q) = %+v, want %+v", tc.pattern, got, tc.want)
		}
	}
}

// TestRegexTestSound checks, on patterns of the benchmark's and the
// built-in policy's kind and strings near them, that the requirement check
// in front of a regular expression never turns a match into no match.
func TestRegexTestSound(t *testing.T) {
	patterns := []string{
		`^git\s+push\b.*\s(-f|--force)\b`, `^(npm|yarn|pnpm)\s+(install|i|add)\b`, `\brm\s+(-[a-zA-Z]*[rf][a-zA-Z]*\s+)+(/|~|\$HOME)(\s|$)`,
		`(curl|wget)[^|]*\|\s*(sudo\s+)?(ba|z)?sh\b`, `^(pip3?|uv pip|poetry)\s+(install|add)\b`, `^(env|printenv|set)\s*$`,
		`^git\s+(status|log|diff|show|branch|remote\s+-v)\b`, `(?i)\b(drop|truncate)\s+(table|database|schema)\b`,
		`^aws\s+\S+\s+(rm|delete-\S+|terminate-\S+)\b`, `(package-lock\.json|yarn\.lock|go\.sum|Cargo\.lock)$`,
		`a+b+c`, `(ab)+c`, "x\uFFFDy", "^\uFFFD", `(?:ab){2,3}x`, `^$`, `^`, `x*`, `^(a|ab)(c|bcd)`, `(?s)^a.b`, "^\u00e9t\u00e9", `\Aabc`, `abc\z`,
	}
	inputs := []string{"", "git push -f origin", "git  push --force", "git status", "gi", "npm install x", "pnpm add y",
		"rm -rf /", "echo; rm -fr ~ ", "curl x | sudo bash", "wget -O- u|sh", "pip3 install q", "uv pip add r",
		"poetry install", "env", "printenv  ", "set", "git remote -v", "DROP TABLE t", "aws s3 rm x", "aws ec2 terminate-instances",
		"go.sum", "x/Cargo.lock", "aabbc", "ababc", "ababx", "abababx", "abcd", "abbcd", "a\nb", "\u00e9t\u00e9", "abc", "zabc", "x\xffy", "\xff", "x\uFFFDy"}
	for _, p := range patterns {
		f := regexTest(p)
		re := regexp.MustCompile(p)
		if f == nil {
			t.Fatalf("%q: no test", p)
		}
		for _, in := range inputs {
			for _, v := range []string{in, "x " + in, in + " x", in + "\n"} {
				if got, want := f(v), re.MatchString(v); got != want {
					t.Errorf("%q on %q: %v, regexp says %v", p, v, got, want)
				}
			}
		}
	}
}

// TestConjunctTestsSound checks, for conditions with conjunct tests, that
// whenever a test says false CEL itself says false: not true, not an error.
func TestConjunctTestsSound(t *testing.T) {
	conds := []string{
		`has(args.command) && args.command.startsWith("git push")`,
		`args.command.startsWith("git push")`,
		`args.command.contains("x") && args.missing == "y"`,
		`args.missing == "y" && args.command.contains("x")`,
		`int(args.n) > 2 && args.command.endsWith("x")`,
		`"command" in args && args["command"].matches("^(git|hg)\\s+push")`,
		`args.method in ["POST", "PUT"]`,
		`args.n != "3"`,
		`cwd.startsWith("/etc") && tool == "Bash" && kind != "sql"`,
		`facts.sql_class == "ddl" && args.query.contains("drop")`,
		`confidence >= 0.0 && confidence < 0.3`,
		`0.5 < confidence`,
		`has(args.opts) && args.opts.depth > 2`,
		`args.command.startsWith("a") && facts.urls.exists(u, u.startsWith("http:"))`,
		`facts.paths.exists(p, p.path.startsWith("/etc") && args.missing == "x")`,
		`facts.paths.exists(p, args.missing == "x" && !p.in_cwd)`,
		`facts.paths.exists(p, p.intent == "delete" && !p.in_cwd && !p.created)`,
		`facts.urls.exists(u, u.matches("^http://") && int(args.command) > 1)`,
	}
	low, nan := 0.1, math.NaN()
	acts := []*action.Action{
		{Tool: "Bash", Kind: action.KindShell, Cwd: "/etc", Args: map[string]any{"command": "git push", "n": 3.0}},
		{Tool: "Bash", Kind: action.KindShell, Cwd: "/p", Args: map[string]any{"command": "ls x"}, Confidence: &low},
		{Tool: "Bash", Kind: action.KindShell, Args: map[string]any{"command": 42.0, "method": []any{"POST"}}},
		{Tool: "Bash", Kind: action.KindShell, Args: map[string]any{"command": nil, "n": "3"}, Confidence: &nan},
		{Tool: "Fetch", Kind: action.KindNetFetch, Args: map[string]any{"method": "POST", "opts": map[string]any{"depth": 3.0}}},
		{Tool: "q", Kind: action.KindSQL, Args: map[string]any{"query": "drop table x"}, Facts: action.Facts{SQLClass: "ddl"}},
		{Tool: "q", Kind: action.KindSQL},
		{Tool: "Write", Kind: action.KindFileWrite, Args: map[string]any{"command": "x"}, Facts: action.Facts{
			Paths: []action.PathFact{{Path: "/etc/x", Intent: action.PathWrite}, {Path: "/p/y", Intent: action.PathDelete, InCwd: true}},
			URLs:  []string{"http://x", "https://y"}}},
		{Tool: "Rm", Kind: action.KindFileDelete, Facts: action.Facts{Paths: []action.PathFact{{Path: "/q", Intent: action.PathDelete, Created: true}}}},
	}
	for _, when := range conds {
		p, err := compileCEL(when)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if len(p.tests) == 0 {
			t.Errorf("%s: no conjunct tests", when)
		}
		for i, a := range acts {
			s := newSubject(a)
			skip := false
			for _, tst := range p.tests {
				skip = skip || !tst(s)
			}
			out, _, err := p.prg.Eval(s)
			s.close()
			if skip && (err != nil || out != types.False) {
				t.Errorf("%s on action %d: a test says false, CEL says %v, %v", when, i, out, err)
			}
		}
	}
}

// sameDecision fails unless First's answer (got) is the reference's (want):
// the same rule, or the same rule's evaluation error.
func sameDecision(got *Compiled, gotErr error, want *Compiled, wantErr error) error {
	var ge, we *EvalError
	switch {
	case (gotErr != nil) != (wantErr != nil):
		return fmt.Errorf("error %v, the exhaustive evaluation's %v", gotErr, wantErr)
	case gotErr != nil && (!errors.As(gotErr, &ge) || !errors.As(wantErr, &we) || ge.Rule != we.Rule || ge.Layer != we.Layer):
		return fmt.Errorf("error %v, the exhaustive evaluation's %v", gotErr, wantErr)
	case got != want:
		return fmt.Errorf("rule %s, the exhaustive evaluation's %s", ruleName(got), ruleName(want))
	}
	return nil
}
