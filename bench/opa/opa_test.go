package opa

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

const rulesFile = "../testdata/rules100.json"

// prepare renders rs as Rego and prepares the decision query once.
func prepare(tb testing.TB, rs *RuleSet) rego.PreparedEvalQuery {
	tb.Helper()
	src, err := rs.Rego()
	if err != nil {
		tb.Fatal(err)
	}
	pq, err := rego.New(rego.Query(Query), rego.Module("rules100.rego", src)).PrepareForEval(context.Background())
	if err != nil {
		tb.Fatalf("the rendered Rego does not compile: %v\n%s", err, src)
	}
	return pq
}

func load(tb testing.TB) (*RuleSet, rego.PreparedEvalQuery) {
	tb.Helper()
	rs, err := ReadRuleSet(rulesFile)
	if err != nil {
		tb.Fatal(err)
	}
	if len(rs.Rules) != 100 {
		tb.Fatalf("the rule set has %d rules, want 100", len(rs.Rules))
	}
	return rs, prepare(tb, rs)
}

// decision extracts the level and rule name from a result set.
func decision(tb testing.TB, res rego.ResultSet, err error) (level, rule string) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Expressions) != 1 {
		tb.Fatalf("result set %v, want one decision", res)
	}
	m, ok := res[0].Expressions[0].Value.(map[string]any)
	if !ok {
		tb.Fatalf("decision %v is not an object", res[0].Expressions[0].Value)
	}
	level, _ = m["level"].(string)
	rule, _ = m["rule"].(string)
	return level, rule
}

// TestRegoDecisions checks that OPA reaches every case's decision. Package
// bench checks that Overseer reaches the same ones on the same input, so
// the benchmarks of the two compare the same decisions.
func TestRegoDecisions(t *testing.T) {
	rs, pq := load(t)
	ctx := context.Background()
	for _, c := range rs.Cases {
		t.Run(c.Name, func(t *testing.T) {
			in, err := c.Input()
			if err != nil {
				t.Fatal(err)
			}
			res, err := pq.Eval(ctx, rego.EvalInput(in))
			level, rule := decision(t, res, err)
			if level != c.Level || rule != c.Rule {
				t.Errorf("decision %s by %q, want %s by %q", level, rule, c.Level, c.Rule)
			}
		})
	}
}

// TestRegoShapes checks the rendering of the constructs whose Rego
// semantics must equal Overseer's: case-insensitive tool globs where '*'
// does not cross '/', a missing agent, and the per-kind default.
func TestRegoShapes(t *testing.T) {
	rs, err := ParseRuleSet([]byte(`{"defaults":{"shell":"notify"},"rules":[
		{"name":"glob","tool":["mcp__gh__*"],"level":"block"},
		{"name":"any-agent","agent":["*"],"kind":["sql"],"level":"approve"},
		{"name":"lits","tool":["Read","GREP"],"level":"auto"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	pq := prepare(t, rs)
	tests := []struct {
		name        string
		in          map[string]any
		level, rule string
	}{
		{"glob matches", map[string]any{"tool": "mcp__gh__list", "kind": "mcp"}, "block", "glob"},
		{"glob ignores case", map[string]any{"tool": "MCP__GH__List", "kind": "mcp"}, "block", "glob"},
		{"star stops at slash", map[string]any{"tool": "mcp__gh__a/b", "kind": "mcp"}, "confirm", ""},
		{"missing agent is empty", map[string]any{"tool": "q", "kind": "sql"}, "approve", "any-agent"},
		{"literal ignores case", map[string]any{"tool": "grep", "kind": "other"}, "auto", "lits"},
		{"default of kind", map[string]any{"tool": "x", "kind": "shell"}, "notify", ""},
		{"default of unknown kind", map[string]any{"tool": "x", "kind": "exec"}, "confirm", ""},
		{"default without kind", map[string]any{"tool": "x"}, "confirm", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := pq.Eval(context.Background(), rego.EvalInput(tt.in))
			level, rule := decision(t, res, err)
			if level != tt.level || rule != tt.rule {
				t.Errorf("decision %s by %q, want %s by %q", level, rule, tt.level, tt.rule)
			}
		})
	}
}

var parseTests = []struct {
	name string
	doc  string
	ok   bool
}{
	{"minimal", `{"rules":[{"name":"a","level":"auto"}]}`, true},
	{"conditions", `{"rules":[{"name":"a","level":"auto","tool":["a*"],"cond":[
		{"op":"arg_in","key":"m","value":["A"]},{"op":"confidence_below","value":0.5},
		{"op":"command_arg","name":"rm","value":"-rf"},{"op":"path_outside_cwd"},{"op":"url_regex","value":"^x"}]}]}`, true},
	{"unknown field", `{"rules":[],"x":1}`, false},
	{"trailing data", `{"rules":[]}{}`, false},
	{"unknown level", `{"rules":[{"name":"a","level":"allow"}]}`, false},
	{"bad default", `{"defaults":{"shell":"x"},"rules":[]}`, false},
	{"brace glob", `{"rules":[{"name":"a","tool":["{a,b}"],"level":"auto"}]}`, false},
	{"unknown op", `{"rules":[{"name":"a","level":"auto","cond":[{"op":"nope","value":"x"}]}]}`, false},
	{"missing key", `{"rules":[{"name":"a","level":"auto","cond":[{"op":"arg_prefix","value":"x"}]}]}`, false},
	{"bad regex", `{"rules":[{"name":"a","level":"auto","cond":[{"op":"path_regex","value":"("}]}]}`, false},
	{"number for string", `{"rules":[{"name":"a","level":"auto","cond":[{"op":"sql_class","value":1}]}]}`, false},
}

// TestParseRuleSet checks the decoder, and that every rule set it accepts
// renders to Rego that OPA compiles. (The shared decoder of package bench,
// which validates more, has the fuzz target: the project's fuzz runner works
// in the root module, which this one is not part of.)
func TestParseRuleSet(t *testing.T) {
	for _, tt := range parseTests {
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
			prepare(t, rs)
		})
	}
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func reportLatency(b *testing.B, durs []time.Duration) {
	b.Helper()
	slices.Sort(durs)
	b.ReportMetric(float64(percentile(durs, 0.50).Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(percentile(durs, 0.99).Nanoseconds()), "p99-ns")
}

// BenchmarkOPA100Rules measures OPA evaluating the rule set's bench case
// against the same 100 rules in Rego, prepared once, and reports the
// median and the 99th percentile of single evaluations (p50-ns, p99-ns).
//
//   - input: the action is passed as a Go value on every call
//     (rego.EvalInput), as an integration does for each decision.
//   - parsed-input: the action is converted to OPA's AST once and passed
//     with rego.EvalParsedInput: OPA's best case, for reference.
func BenchmarkOPA100Rules(b *testing.B) {
	rs, pq := load(b)
	c, ok := rs.Case(rs.Bench)
	if !ok {
		b.Fatalf("no bench case %q", rs.Bench)
	}
	in, err := c.Input()
	if err != nil {
		b.Fatal(err)
	}
	parsed, err := ast.InterfaceToValue(in)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("input", func(b *testing.B) {
		benchEval(b, pq, c, func() rego.EvalOption { return rego.EvalInput(in) })
	})
	b.Run("parsed-input", func(b *testing.B) {
		benchEval(b, pq, c, func() rego.EvalOption { return rego.EvalParsedInput(parsed) })
	})
}

func benchEval(b *testing.B, pq rego.PreparedEvalQuery, c Case, input func() rego.EvalOption) {
	ctx := context.Background()
	for range 100 {
		if _, err := pq.Eval(ctx, input()); err != nil {
			b.Fatal(err)
		}
	}
	durs := make([]time.Duration, b.N)
	var res rego.ResultSet
	var err error
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		res, err = pq.Eval(ctx, input())
		durs[i] = time.Since(start)
	}
	b.StopTimer()
	level, rule := decision(b, res, err)
	if level != c.Level || rule != c.Rule {
		b.Fatalf("decision %s by %q, want %s by %q", level, rule, c.Level, c.Rule)
	}
	reportLatency(b, durs)
}
