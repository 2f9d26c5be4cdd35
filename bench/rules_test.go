package bench

import (
	"errors"
	"testing"

	"github.com/overseer-dev/overseer/internal/policy"
)

// ruleSetTests are small rule sets, valid and not, for the parser.
var ruleSetTests = []struct {
	name string
	doc  string
	ok   bool
}{
	{"minimal", `{"rules":[{"name":"a","level":"auto"}]}`, true},
	{"every field", `{"bench":"c","defaults":{"shell":"confirm"},
		"rules":[{"name":"a","tool":["Bash","mcp__*"],"kind":["shell"],"agent":["ci-?"],
		  "cond":[{"op":"arg_prefix","key":"command","value":"git"},{"op":"confidence_below","value":0.5},
		          {"op":"command_arg","name":"rm","value":"-rf"},{"op":"arg_in","key":"m","value":["A","B"]},
		          {"op":"path_outside_cwd"}],"level":"block"}],
		"cases":[{"name":"c","action":{"tool":"Bash"},"facts":{},"level":"block","rule":"a"}]}`, true},
	{"odd key", `{"rules":[{"name":"a","cond":[{"op":"arg_equals","key":"in","value":"x\"y\\z"}],"level":"auto"}]}`, true},
	{"unknown field", `{"rules":[],"extra":1}`, false},
	{"unknown rule field", `{"rules":[{"name":"a","level":"auto","when":"true"}]}`, false},
	{"trailing data", `{"rules":[]} {}`, false},
	{"not json", `rules: []`, false},
	{"missing name", `{"rules":[{"level":"auto"}]}`, false},
	{"blank name", `{"rules":[{"name":" ","level":"auto"}]}`, false},
	{"duplicate name", `{"rules":[{"name":"a","level":"auto"},{"name":"a","level":"block"}]}`, false},
	{"missing level", `{"rules":[{"name":"a"}]}`, false},
	{"unknown level", `{"rules":[{"name":"a","level":"allow"}]}`, false},
	{"unknown kind", `{"rules":[{"name":"a","kind":["exec"],"level":"auto"}]}`, false},
	{"bad default kind", `{"defaults":{"exec":"auto"},"rules":[]}`, false},
	{"bad default level", `{"defaults":{"shell":"maybe"},"rules":[]}`, false},
	{"glob with class", `{"rules":[{"name":"a","tool":["[ab]*"],"level":"auto"}]}`, false},
	{"glob with brace", `{"rules":[{"name":"a","tool":["{a,b}"],"level":"auto"}]}`, false},
	{"empty glob", `{"rules":[{"name":"a","agent":[""],"level":"auto"}]}`, false},
	{"unknown op", `{"rules":[{"name":"a","cond":[{"op":"arg_glob","key":"k","value":"x"}],"level":"auto"}]}`, false},
	{"arg op without key", `{"rules":[{"name":"a","cond":[{"op":"arg_prefix","value":"x"}],"level":"auto"}]}`, false},
	{"key on a path op", `{"rules":[{"name":"a","cond":[{"op":"path_prefix","key":"k","value":"x"}],"level":"auto"}]}`, false},
	{"command_arg without name", `{"rules":[{"name":"a","cond":[{"op":"command_arg","value":"x"}],"level":"auto"}]}`, false},
	{"bad regex", `{"rules":[{"name":"a","cond":[{"op":"url_regex","value":"("}],"level":"auto"}]}`, false},
	{"number for a string", `{"rules":[{"name":"a","cond":[{"op":"sql_class","value":3}],"level":"auto"}]}`, false},
	{"string for a number", `{"rules":[{"name":"a","cond":[{"op":"confidence_below","value":"0.5"}],"level":"auto"}]}`, false},
	{"empty list", `{"rules":[{"name":"a","cond":[{"op":"arg_in","key":"k","value":[]}],"level":"auto"}]}`, false},
	{"value on a no-value op", `{"rules":[{"name":"a","cond":[{"op":"path_outside_cwd","value":true}],"level":"auto"}]}`, false},
	{"case of unknown rule", `{"rules":[],"cases":[{"name":"c","action":{},"level":"auto","rule":"x"}]}`, false},
	{"case action not an object", `{"rules":[],"cases":[{"name":"c","action":[],"level":"auto"}]}`, false},
	{"case without level", `{"rules":[],"cases":[{"name":"c","action":{}}]}`, false},
	{"unknown bench case", `{"bench":"x","rules":[]}`, false},
}

func TestParseRuleSet(t *testing.T) {
	for _, tt := range ruleSetTests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := ParseRuleSet([]byte(tt.doc))
			if !tt.ok {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			src, err := rs.PolicyYAML()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := policy.Parse(tt.name, src, policy.Options{}); err != nil {
				t.Fatalf("rendered policy does not parse: %v\n%s", err, src)
			}
		})
	}
}

func TestCEL(t *testing.T) {
	tests := []struct {
		name string
		cond string
		want string
	}{
		{"prefix", `{"op":"arg_prefix","key":"command","value":"git push"}`,
			`has(args.command) && args.command.startsWith("git push")`},
		{"reserved key", `{"op":"arg_contains","key":"in","value":"x"}`, `"in" in args && args["in"].contains("x")`},
		{"dashed key", `{"op":"arg_equals","key":"a-b","value":"x"}`, `"a-b" in args && args["a-b"] == "x"`},
		{"regex escapes", `{"op":"arg_regex","key":"q","value":"^\\s+\"x\""}`, `has(args.q) && args.q.matches("^\\s+\"x\"")`},
		{"list", `{"op":"arg_in","key":"m","value":["GET","POST"]}`, `has(args.m) && args.m in ["GET", "POST"]`},
		{"path", `{"op":"path_prefix","value":"/etc/"}`, `facts.paths.exists(p, p.path.startsWith("/etc/"))`},
		{"outside", `{"op":"path_outside_cwd"}`, `facts.paths.exists(p, !p.in_cwd)`},
		{"command arg", `{"op":"command_arg","name":"rm","value":"-rf"}`, `facts.commands.exists(c, c.name == "rm" && "-rf" in c.args)`},
		{"whole number", `{"op":"confidence_below","value":1}`, `confidence >= 0.0 && confidence < 1.0`},
		{"fraction", `{"op":"confidence_below","value":0.25}`, `confidence >= 0.0 && confidence < 0.25`},
		{"sql", `{"op":"sql_class","value":"ddl"}`, `facts.sql_class == "ddl"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := ParseRuleSet([]byte(`{"rules":[{"name":"r","level":"auto","cond":[` + tt.cond + `]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			got, err := rs.Rules[0].CEL()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("CEL = %s\nwant  %s", got, tt.want)
			}
		})
	}
}

// FuzzParseRuleSet checks that the parser never panics and that every rule
// set it accepts renders to a policy Overseer accepts: the validator and
// the renderer agree.
func FuzzParseRuleSet(f *testing.F) {
	for _, tt := range ruleSetTests {
		f.Add([]byte(tt.doc))
	}
	// Not the 100-rule file: each run of it compiles 100 CEL programs, which
	// slows fuzzing to a crawl; TestRuleSetDecisions covers it.
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ParseRuleSet(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		src, err := rs.PolicyYAML()
		if err != nil {
			t.Fatalf("accepted rule set does not render: %v", err)
		}
		if _, err := policy.Parse("fuzz", src, policy.Options{}); err != nil {
			t.Fatalf("accepted rule set renders to a policy that does not parse: %v\n%s", err, src)
		}
	})
}
