package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/egress"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/policy"
)

const rulesFile = "testdata/rules100.json"

// loadPolicy reads the shared rule set and compiles it as an Overseer
// admin policy.
func loadPolicy(tb testing.TB) (*RuleSet, *policy.Policy) {
	tb.Helper()
	rs, err := ReadRuleSet(rulesFile)
	if err != nil {
		tb.Fatal(err)
	}
	src, err := rs.PolicyYAML()
	if err != nil {
		tb.Fatal(err)
	}
	p, err := policy.Parse("rules100.yaml", src, policy.Options{})
	if err != nil {
		tb.Fatalf("the rendered policy does not parse: %v\n%s", err, src)
	}
	if len(p.Rules) != len(rs.Rules) {
		tb.Fatalf("policy has %d rules, the rule set %d", len(p.Rules), len(rs.Rules))
	}
	return rs, p
}

// caseAction decodes a case's action as an adapter would.
func caseAction(tb testing.TB, c Case) action.Action {
	tb.Helper()
	var a action.Action
	if err := json.Unmarshal(c.Action, &a); err != nil {
		tb.Fatalf("case %s: %v", c.Name, err)
	}
	return a
}

// checkDecision fails unless v is the decision the case expects.
func checkDecision(tb testing.TB, c Case, v action.Verdict) {
	tb.Helper()
	if got := v.Level.String(); got != c.Level {
		tb.Errorf("case %s: level %s, want %s (decider %+v)", c.Name, got, c.Level, v.Decider)
	}
	switch {
	case v.Decider == nil:
		tb.Errorf("case %s: verdict has no decider", c.Name)
	case c.Rule == "" && v.Decider.Source != action.SourceDefault:
		tb.Errorf("case %s: decided by %s %q, want the per-kind default", c.Name, v.Decider.Source, v.Decider.Name)
	case c.Rule != "" && (v.Decider.Source != action.SourceRule || v.Decider.Name != c.Rule):
		tb.Errorf("case %s: decided by %s %q, want rule %q", c.Name, v.Decider.Source, v.Decider.Name, c.Rule)
	}
}

// TestRuleSetDecisions checks that Overseer reaches every case's decision
// on the facts the case gives, which are the facts bench/opa feeds OPA:
// with the same decisions on the same input, the two benchmarks compare
// like with like.
func TestRuleSetDecisions(t *testing.T) {
	rs, p := loadPolicy(t)
	ctx := context.Background()
	eng, err := firewall.New(ctx, firewall.Config{Policy: p,
		Clock: clock.NewFake(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rs.Cases {
		t.Run(c.Name, func(t *testing.T) {
			a := caseAction(t, c)
			v := eng.Evaluate(ctx, &a)
			checkDecision(t, c, v)
			got, err := json.Marshal(a.Facts)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, got, c.Facts) {
				t.Errorf("facts %s, the case says %s", got, c.Facts)
			}
		})
	}
}

// TestTypeErrorFailsClosed pins the one way the two renderings differ: an
// argument of the wrong type is a CEL evaluation error, on which Overseer
// fails closed (a person decides), while in Rego the condition is merely
// undefined and the next rule is tried. No case of the rule set relies on
// either behaviour.
func TestTypeErrorFailsClosed(t *testing.T) {
	_, p := loadPolicy(t)
	ctx := context.Background()
	eng, err := firewall.New(ctx, firewall.Config{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args map[string]any
	}{
		{"number", map[string]any{"command": 42}},
		{"list", map[string]any{"command": []any{"git", "status"}}},
		{"object", map[string]any{"command": map[string]any{"x": "git status"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := eng.Evaluate(ctx, &action.Action{Tool: "Bash", Kind: action.KindShell, Args: tt.args, Cwd: "/tmp/proj"})
			if v.Level.RunsWithoutPerson() {
				t.Fatalf("level %s for a condition that cannot be evaluated, want a person to decide", v.Level)
			}
			if v.Decider == nil || v.Decider.Source != action.SourceError {
				t.Errorf("decider %+v, want an evaluation error", v.Decider)
			}
		})
	}
}

func jsonEqual(tb testing.TB, a, b []byte) bool {
	tb.Helper()
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		tb.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// BenchmarkEvaluate100Rules measures Engine.Evaluate for the rule set's
// bench case against the 100-rule policy, and reports the median and the
// 99th percentile of single evaluations (p50-ns, p99-ns) besides ns/op.
//
//   - policy-only: no store, no guards, so pure policy evaluation: the
//     same work OPA does in bench/opa, plus Overseer's own steps (kind and
//     facts, the argument size cap, the arguments' hash, the verdict).
//   - default-guards: the standard hard guards as the daemon runs them.
func BenchmarkEvaluate100Rules(b *testing.B) {
	rs, p := loadPolicy(b)
	c, ok := rs.Case(rs.Bench)
	if !ok {
		b.Fatalf("no bench case %q", rs.Bench)
	}
	tmpl := caseAction(b, c)
	ctx := context.Background()

	b.Run("policy-only", func(b *testing.B) {
		eng, err := firewall.New(ctx, firewall.Config{Policy: p})
		if err != nil {
			b.Fatal(err)
		}
		v := benchEvaluate(b, eng, tmpl)
		checkDecision(b, c, v)
	})
	b.Run("default-guards", func(b *testing.B) {
		guards, err := kernel.DefaultGuards(p, kernel.GuardEnv{})
		if err != nil {
			b.Fatal(err)
		}
		eng, err := firewall.New(ctx, firewall.Config{Policy: p, Guards: guards})
		if err != nil {
			b.Fatal(err)
		}
		v := benchEvaluate(b, eng, tmpl)
		// Guards can only raise the level a rule gives.
		want, err := action.ParseLevel(c.Level)
		if err != nil {
			b.Fatal(err)
		}
		if v.Level < want {
			b.Errorf("level %s with guards, below the rule's %s", v.Level, want)
		}
		b.ReportMetric(float64(len(guards)), "guards")
	})
	// The same without the egress guard, measured in the same run: the
	// guard (and its secret analyser) may cost at most half again.
	b.Run("default-guards-no-egress", func(b *testing.B) {
		guards, err := kernel.DefaultGuards(p, kernel.GuardEnv{})
		if err != nil {
			b.Fatal(err)
		}
		eng, err := firewall.New(ctx, firewall.Config{Policy: p, Guards: withoutGuard(guards, egress.Name)})
		if err != nil {
			b.Fatal(err)
		}
		benchEvaluate(b, eng, tmpl)
	})
}

// withoutGuard returns guards less the one named name.
func withoutGuard(guards []guard.Guard, name string) []guard.Guard {
	var out []guard.Guard
	for _, g := range guards {
		if g.Name() != name {
			out = append(out, g)
		}
	}
	return out
}

// egressAction is a request the egress guard scans: a curl POST of a
// 1 KB JSON body to a host (no secret in it).
func egressAction() action.Action {
	body := `{"items":[` + strings.Repeat(`{"id":"3f2b8c4e-9a1d-4e7b-8c2f-1a2b3c4d5e6f","name":"widget","qty":3,"note":"retry with backoff"},`, 10) + `{}]}`
	return action.Action{Tool: "Bash", Kind: action.KindShell, Cwd: "/tmp/proj",
		Args: map[string]any{"command": "curl -s -X POST -H 'Content-Type: application/json' -d '" + body + "' https://api.example.com/v1/orders"}}
}

// BenchmarkEvaluateEgress measures Evaluate on an action that sends data
// (egressAction) with the default guards, with and without the egress
// guard, in one run.
func BenchmarkEvaluateEgress(b *testing.B) {
	_, p := loadPolicy(b)
	ctx := context.Background()
	tmpl := egressAction()
	for _, c := range []struct {
		name string
		drop string
	}{{"with-egress", ""}, {"without-egress", egress.Name}} {
		b.Run(c.name, func(b *testing.B) {
			guards, err := kernel.DefaultGuards(p, kernel.GuardEnv{})
			if err != nil {
				b.Fatal(err)
			}
			if c.drop != "" {
				guards = withoutGuard(guards, c.drop)
			}
			eng, err := firewall.New(ctx, firewall.Config{Policy: p, Guards: guards})
			if err != nil {
				b.Fatal(err)
			}
			v := benchEvaluate(b, eng, tmpl)
			for _, r := range v.Reasons {
				if strings.HasPrefix(r.Name, "egress.") {
					b.Fatalf("the benchmark's request is judged %s by %s: %s", r.Level, r.Name, r.Message)
				}
			}
		})
	}
}

// benchEvaluate evaluates a fresh copy of tmpl b.N times (Evaluate fills
// in the action's facts), timing each call, and returns the last verdict.
func benchEvaluate(b *testing.B, eng *firewall.Engine, tmpl action.Action) action.Verdict {
	b.Helper()
	ctx := context.Background()
	// Warm up caches so the first samples are not outliers of set-up.
	for range 100 {
		a := tmpl
		eng.Evaluate(ctx, &a)
	}
	durs := make([]time.Duration, b.N)
	var v action.Verdict
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		a := tmpl
		start := time.Now()
		v = eng.Evaluate(ctx, &a)
		durs[i] = time.Since(start)
	}
	b.StopTimer()
	reportLatency(b, durs)
	return v
}
