package policy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/bench"
	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/policy"
)

// corpus is the policies the differential tests judge actions with, and
// actions from their examples and cases.
type corpus struct {
	policies []*policy.Policy
	actions  []*action.Action
	// words are the string literals of the policies' conditions and
	// globs, from which random actions are built.
	words []string
}

// loadCorpus reads the built-in policy, the policy corpora of
// testdata/match and the benchmark's 100-rule policy with its cases.
func loadCorpus(tb testing.TB) *corpus {
	tb.Helper()
	c := &corpus{policies: []*policy.Policy{policy.Builtin()}}
	files, err := filepath.Glob(filepath.Join("testdata", "match", "*.yaml"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no policy corpora: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var mf struct {
			Policy string `yaml:"policy"`
			Cases  []struct {
				Action map[string]any `yaml:"action"`
			} `yaml:"cases"`
		}
		if err := yaml.Unmarshal(data, &mf); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		p, err := policy.Parse(f, []byte(mf.Policy), policy.Options{})
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		c.policies = append(c.policies, p)
		for _, tc := range mf.Cases {
			b, err := json.Marshal(tc.Action)
			if err != nil {
				tb.Fatal(err)
			}
			var a action.Action
			if err := json.Unmarshal(b, &a); err != nil {
				tb.Fatalf("%s: %v", f, err)
			}
			c.actions = append(c.actions, &a)
		}
	}
	rs, err := bench.ReadRuleSet(filepath.Join("..", "..", "bench", "testdata", "rules100.json"))
	if err != nil {
		tb.Fatal(err)
	}
	src, err := rs.PolicyYAML()
	if err != nil {
		tb.Fatal(err)
	}
	p, err := policy.Parse("rules100.yaml", src, policy.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	c.policies = append(c.policies, p)
	for _, cs := range rs.Cases {
		var a action.Action
		if err := json.Unmarshal(cs.Action, &a); err != nil {
			tb.Fatalf("case %s: %v", cs.Name, err)
		}
		if len(cs.Facts) > 0 {
			if err := json.Unmarshal(cs.Facts, &a.Facts); err != nil {
				tb.Fatalf("case %s: %v", cs.Name, err)
			}
		}
		c.actions = append(c.actions, &a)
	}
	// The shell guard's labelled commands, as shell actions.
	for _, name := range []string{"corpus.tsv", "selfapprove.tsv"} {
		data, err := os.ReadFile(filepath.Join("..", "guard", "shell", "testdata", name))
		if err != nil {
			tb.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Split(line, "\t")
			if len(f) < 2 || strings.HasPrefix(line, "#") {
				continue
			}
			c.actions = append(c.actions, shellAction(f[1]))
		}
	}
	for _, p := range c.policies {
		for _, r := range p.Rules {
			for _, ex := range append(append([]policy.Example(nil), r.Match...), r.NotMatch...) {
				a := &action.Action{Tool: ex.Tool, Kind: ex.Kind, Agent: ex.Agent, Session: ex.Session, Cwd: ex.Cwd, Args: ex.Args}
				if a.Kind == "" {
					a.Kind = action.InferKind(a.Tool)
				}
				if cmd, ok := a.StringArg("command"); ok {
					a.Facts.Commands = shellAction(cmd).Facts.Commands
				}
				c.actions = append(c.actions, a)
			}
			c.words = append(c.words, literals(r.When)...)
			for _, g := range append(append([]string(nil), r.Tool...), r.Agent...) {
				c.words = append(c.words, strings.NewReplacer("*", "x", "?", "y").Replace(g))
			}
		}
	}
	return c
}

// shellAction is a shell action running cmd, its commands split naively
// (on |, && and ;, then on white space).
func shellAction(cmd string) *action.Action {
	a := &action.Action{Tool: "Bash", Kind: action.KindShell, Cwd: "/home/dev/p", Args: map[string]any{"command": cmd}}
	for _, seg := range strings.FieldsFunc(strings.NewReplacer("&&", "|", ";", "|").Replace(cmd), func(r rune) bool { return r == '|' }) {
		if f := strings.Fields(seg); len(f) > 0 {
			a.Facts.Commands = append(a.Facts.Commands, action.Command{Name: f[0], Args: f[1:]})
		}
	}
	return a
}

var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// literals returns a condition's string literals, and for those that look
// like regular expressions a string near what they match.
func literals(when string) []string {
	var out []string
	for _, q := range quoted.FindAllString(when, -1) {
		s, err := strconv.Unquote(q)
		if err != nil {
			continue
		}
		out = append(out, s)
		if strings.ContainsAny(s, `\^$(|`) {
			plain := strings.NewReplacer(`\s+`, " ", `\s*`, " ", `\s`, " ", `\b`, "", `(?i)`, "", `^`, "", `$`, "",
				`\.`, ".", `?`, "", `(`, "", `)`, "").Replace(s)
			out = append(out, strings.Split(plain, "|")...)
		}
	}
	return out
}

// randomAction makes an action from the corpus' words and from values of
// the wrong type, so that conditions match, fail and fail to evaluate.
func (c *corpus) randomAction(r *rand.Rand) *action.Action {
	word := func() string {
		switch r.IntN(8) {
		case 0:
			return ""
		case 1:
			return strings.ToUpper(c.words[r.IntN(len(c.words))])
		}
		return c.words[r.IntN(len(c.words))]
	}
	phrase := func() string {
		parts := make([]string, 1+r.IntN(3))
		for i := range parts {
			parts[i] = word()
		}
		sep := []string{" ", "", " | ", "/", " && "}[r.IntN(5)]
		return []string{"", "sudo ", " ", "/"}[r.IntN(4)] + strings.Join(parts, sep)
	}
	value := func() any {
		switch r.IntN(10) {
		case 0:
			return nil
		case 1:
			return float64(r.IntN(5))
		case 2:
			return []any{phrase()}
		case 3:
			return map[string]any{"depth": float64(r.IntN(5)), "x": phrase()}
		case 4:
			return true
		}
		return phrase()
	}
	kinds := append([]action.Kind{"", "bogus"}, action.Kinds...)
	a := &action.Action{
		Tool:    []string{word(), "Bash", "bash", "Write", "Edit", "WebFetch", "mcp__github__get_x", phrase()}[r.IntN(8)],
		Kind:    kinds[r.IntN(len(kinds))],
		Agent:   []string{"", "claude-code", "ci-runner", "sandbox-1", word()}[r.IntN(5)],
		Session: []string{"", "s-42", "s"}[r.IntN(3)],
		Cwd:     []string{"", "/etc", "/etc/x", "/home/dev/p", "/srv/app", phrase()}[r.IntN(6)],
		Intent:  []string{"", "cleanup the build", phrase()}[r.IntN(3)],
	}
	if r.IntN(8) > 0 {
		a.Args = map[string]any{}
		keys := []string{"command", "query", "sql", "namespace", "method", "url", "file_path", "path", "options", "tags", "n", word()}
		for range 1 + r.IntN(4) {
			a.Args[keys[r.IntN(len(keys))]] = value()
		}
	}
	switch r.IntN(6) {
	case 0:
		v := r.Float64()
		a.Confidence = &v
	case 1:
		v := math.NaN()
		a.Confidence = &v
	case 2:
		v := []float64{0, 0.3, 0.29999, -1, 1}[r.IntN(5)]
		a.Confidence = &v
	}
	for range r.IntN(3) {
		cmd := action.Command{Name: word(), Dynamic: r.IntN(6) == 0}
		for range r.IntN(3) {
			cmd.Args = append(cmd.Args, word())
		}
		a.Facts.Commands = append(a.Facts.Commands, cmd)
	}
	for range r.IntN(3) {
		a.Facts.Paths = append(a.Facts.Paths, action.PathFact{Path: phrase(), Intent: []action.PathIntent{action.PathRead, action.PathWrite, action.PathDelete}[r.IntN(3)],
			InCwd: r.IntN(2) == 0, Created: r.IntN(4) == 0})
	}
	for range r.IntN(3) {
		a.Facts.URLs = append(a.Facts.URLs, []string{"http://", "https://", ""}[r.IntN(3)]+phrase())
	}
	a.Facts.SQLClass = []string{"", "ddl", "read", "write", word()}[r.IntN(5)]
	if r.IntN(4) == 0 {
		a.Facts.Notes = []string{"unparseable"}
	}
	return a
}

// checkSame fails unless First, and Trace's last step, agree with the
// exhaustive evaluation of every rule on a.
func checkSame(p *policy.Policy, a *action.Action) error {
	want, wantErr := policy.FirstExhaustive(p.Rules, a)
	got, gotErr := policy.First(p.Rules, a)
	if err := same(got, gotErr, want, wantErr); err != nil {
		return fmt.Errorf("First: %w", err)
	}
	var last *policy.Compiled
	var lastErr error
	if steps := policy.Trace(p.Rules, a); len(steps) > 0 {
		st := steps[len(steps)-1]
		if st.Matched {
			last = st.Rule
		}
		lastErr = st.Err
	}
	if err := same(last, lastErr, want, wantErr); err != nil {
		return fmt.Errorf("Trace: %w", err)
	}
	return nil
}

func same(got *policy.Compiled, gotErr error, want *policy.Compiled, wantErr error) error {
	var ge, we *policy.EvalError
	switch {
	case (gotErr != nil) != (wantErr != nil):
		return fmt.Errorf("error %v, the exhaustive evaluation's %v", gotErr, wantErr)
	case gotErr != nil && (!errors.As(gotErr, &ge) || !errors.As(wantErr, &we) || ge.Rule != we.Rule || ge.Layer != we.Layer):
		return fmt.Errorf("error %v, the exhaustive evaluation's %v", gotErr, wantErr)
	case got != want:
		return fmt.Errorf("rule %s, the exhaustive evaluation's %s", name(got), name(want))
	}
	return nil
}

func name(c *policy.Compiled) string {
	if c == nil {
		return "(none)"
	}
	return strconv.Quote(c.Name)
}

func describe(a *action.Action) string {
	b, _ := json.Marshal(a)
	return string(b)
}

// TestFirstSameAsExhaustive is the differential test of First's shortcuts
// (the command-name prefilter and the conjunct tests): on the corpora's
// policies, for their own example and case actions and for random actions
// built from their literals, First and Trace give the decision of matching
// every rule in full, the same rule or the same rule's evaluation error.
func TestFirstSameAsExhaustive(t *testing.T) {
	c := loadCorpus(t)
	r := rand.New(rand.NewPCG(18, 2026))
	actions := append([]*action.Action(nil), c.actions...)
	for range 3000 {
		actions = append(actions, c.randomAction(r))
	}
	counts := map[string]int{}
	for _, p := range c.policies {
		for _, a := range actions {
			if err := checkSame(p, a); err != nil {
				t.Fatalf("policy %s, action %s: %v", p.Name, describe(a), err)
			}
			switch got, err := policy.First(p.Rules, a); {
			case err != nil:
				counts["error"]++
			case got != nil:
				counts["match"]++
			default:
				counts["none"]++
			}
		}
	}
	// The actions must exercise every outcome, or the test proves little.
	for _, k := range []string{"error", "match", "none"} {
		if counts[k] < 100 {
			t.Errorf("only %d decisions of kind %q: %v", counts[k], k, counts)
		}
	}
	t.Logf("decisions: %v", counts)
}

// FuzzFirstSameAsExhaustive checks the same on actions (and an extra
// condition) the fuzzer makes.
func FuzzFirstSameAsExhaustive(f *testing.F) {
	c := loadCorpus(f)
	f.Add(`has(args.command) && args.command.startsWith("git push")`, "Bash", "shell", "git push --force", "/etc", "ddl", 0.2, "command")
	f.Add(`args.command.matches("^(npm|yarn)\\s+publish\\b") && confidence < 0.3`, "bash", "shell", "npm publish", "", "", -1.0, "command")
	f.Add(`"query" in args && args["query"].contains("drop") && facts.sql_class == "ddl"`, "q", "sql", "drop table", "/", "ddl", 1.0, "query")
	f.Add(`args.n != "3" && tool == "x"`, "x", "other", "3", "/srv", "", math.NaN(), "n")
	f.Fuzz(func(t *testing.T, when, tool, kind, arg, cwd, sqlClass string, conf float64, key string) {
		a := &action.Action{Tool: tool, Kind: action.Kind(kind), Cwd: cwd, Confidence: &conf,
			Args:  map[string]any{key: arg, "n": conf, "list": []any{arg}},
			Facts: action.Facts{SQLClass: sqlClass, URLs: []string{arg}}}
		if f := strings.Fields(arg); len(f) > 0 {
			a.Facts.Commands = []action.Command{{Name: f[0], Args: f[1:]}}
			a.Facts.Paths = []action.PathFact{{Path: f[len(f)-1]}}
		}
		policies := c.policies
		rules := []policy.Rule{{Name: "fuzzed", When: when, Level: action.Confirm}, {Name: "after", Level: action.Auto}}
		if cs, err := policy.CompileRules(policy.LayerUser, rules, policy.Options{SkipExamples: true}); err == nil {
			policies = append(policies[:len(policies):len(policies)], &policy.Policy{Name: "fuzzed", Rules: cs})
		}
		for _, p := range policies {
			if err := checkSame(p, a); err != nil {
				t.Fatalf("policy %s, action %s: %v", p.Name, describe(a), err)
			}
		}
	})
}

// randomCondition writes a condition of one to three conjuncts, of the
// shapes the conjunct tests decide and of others, over the words.
func randomCondition(r *rand.Rand, words []string) string {
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	lit := func() string { return strconv.Quote(pick(words)) }
	re := func() string {
		w, w2 := regexp.QuoteMeta(pick(words)), regexp.QuoteMeta(pick(words))
		return strconv.Quote(pick([]string{"^" + w, w + "$", `\b` + w, "^(" + w + "|" + w2 + `)\s+`, "(?i)" + w,
			"^" + w + `\s+(` + w2 + "|x)", w + ".*" + w2, "(" + w + ")+" + w2, "^$", `s(?:witch|tash)`, `^(switch|stash)\b`, w + "?" + w2}))
	}
	keys := []string{"command", "query", "n", "list", "missing"}
	str := func() string {
		return pick([]string{"tool", "kind", "agent", "session", "cwd", "intent", "facts.sql_class",
			"args." + pick(keys), `args["` + pick(keys) + `"]`})
	}
	dbl := func() string { return pick([]string{"0.0", "0.3", "-1.0", "1.0", "0.5"}) }
	elem := func(v string) string {
		if v == "u" {
			return pick([]string{"u.startsWith(" + lit() + ")", "u.matches(" + re() + ")", "u == " + lit(), "u.contains(" + lit() + ")",
				"u.size() > 3", "tool == " + lit(), "!u.startsWith(" + lit() + ")"})
		}
		return pick([]string{"p.path.startsWith(" + lit() + ")", "p.path.endsWith(" + lit() + ")", "p.path.matches(" + re() + ")",
			"p.intent == " + strconv.Quote(pick([]string{"read", "write", "delete"})), "p.in_cwd", "!p.in_cwd", "p.created", "!p.created",
			`p.intent in ["write", "delete"]`, "p.path.size() > 4", "int(p.path) > 1", "!p.path.contains(" + lit() + ")", "args.command.contains(" + lit() + ")"})
	}
	exists := func() string {
		v, list := "p", "facts.paths"
		if r.IntN(3) == 0 {
			v, list = "u", "facts.urls"
		}
		parts := make([]string, 1+r.IntN(3))
		for i := range parts {
			parts[i] = elem(v)
		}
		return list + "." + pick([]string{"exists", "exists", "exists", "all"}) + "(" + v + ", " + strings.Join(parts, " && ") + ")"
	}
	conj := func() string {
		if r.IntN(5) == 0 {
			return exists()
		}
		switch r.IntN(20) {
		case 0:
			return "has(" + pick([]string{"args", "args", "facts"}) + "." + pick(append(keys, "sql_class")) + ")"
		case 1:
			return strconv.Quote(pick(keys)) + " in args"
		case 2, 3:
			return str() + ".startsWith(" + lit() + ")"
		case 4:
			return str() + ".endsWith(" + lit() + ")"
		case 5:
			return str() + ".contains(" + lit() + ")"
		case 6, 7:
			return str() + ".matches(" + re() + ")"
		case 8:
			return str() + " == " + lit()
		case 9:
			return lit() + " == " + str()
		case 10:
			return str() + " != " + lit()
		case 11:
			return str() + " in [" + lit() + ", " + lit() + "]"
		case 12:
			return "confidence " + pick([]string{"<", "<=", ">", ">="}) + " " + dbl()
		case 13:
			return dbl() + " " + pick([]string{"<", "<=", ">", ">="}) + " confidence"
		case 14:
			return "size(args) > 1"
		case 15:
			return "int(args.n) > 2"
		case 16:
			return "args.list.exists(x, x == " + lit() + ")"
		case 17:
			return "facts.commands.exists(c, c.name == " + lit() + ")"
		case 18:
			return "(" + str() + ".startsWith(" + lit() + ") || " + str() + " == " + lit() + ")"
		default:
			return "!" + str() + ".contains(" + lit() + ")"
		}
	}
	parts := make([]string, 1+r.IntN(3))
	for i := range parts {
		parts[i] = conj()
	}
	return strings.Join(parts, " && ")
}

// TestConjunctTestsSameAsCEL is the differential test of the conjunct
// tests on conditions written at random in the shapes they decide (and
// others), over random actions from the same words: one rule at a time,
// First gives the decision of evaluating the condition in full.
func TestConjunctTestsSameAsCEL(t *testing.T) {
	words := []string{"git", "push", "git push", "status", "rm -rf", "/etc", "ddl", "x", "", "Bash", "shell",
		"sudo ", "npm", "publish", "switch", "stash", "GIT"}
	c := &corpus{words: words}
	r := rand.New(rand.NewPCG(18, 7))
	actions := make([]*action.Action, 600)
	for i := range actions {
		actions[i] = c.randomAction(r)
	}
	counts := map[string]int{}
	for n := 0; n < 400; {
		when := randomCondition(r, words)
		cs, err := policy.CompileRules(policy.LayerUser, []policy.Rule{{Name: "r", When: when, Level: action.Confirm}},
			policy.Options{SkipExamples: true})
		if err != nil {
			continue // a type error CEL's checker refuses
		}
		n++
		p := &policy.Policy{Name: when, Rules: cs}
		for _, a := range actions {
			if err := checkSame(p, a); err != nil {
				t.Fatalf("condition %s, action %s: %v", when, describe(a), err)
			}
			switch got, err := policy.First(p.Rules, a); {
			case err != nil:
				counts["error"]++
			case got != nil:
				counts["match"]++
			default:
				counts["none"]++
			}
		}
	}
	for _, k := range []string{"error", "match", "none"} {
		if counts[k] < 1000 {
			t.Errorf("only %d decisions of kind %q: %v", counts[k], k, counts)
		}
	}
	t.Logf("decisions: %v", counts)
}
