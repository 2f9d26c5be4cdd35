package firewall_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/perception"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

const cwd = "/home/dev/proj"

func openStore(t *testing.T) *sqlite.DB {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "overseer.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func mustPolicy(t *testing.T, y string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("test.yaml", []byte(y), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newEngine(t *testing.T, cfg firewall.Config) *firewall.Engine {
	t.Helper()
	e, err := firewall.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func act(tool string, args map[string]any) *action.Action {
	return &action.Action{Tool: tool, Args: args, Cwd: cwd, Agent: "test", Session: "s1"}
}

func TestBuiltinDefaults(t *testing.T) {
	e := newEngine(t, firewall.Config{})
	tests := []struct {
		name string
		a    *action.Action
		want action.Level
	}{
		{"read", act("Read", map[string]any{"file_path": "main.go"}), action.Auto},
		{"write in tree", act("Write", map[string]any{"file_path": "src/main.go", "content": "x"}), action.Notify},
		{"edit in tree", act("Edit", map[string]any{"file_path": cwd + "/a.go"}), action.Notify},
		{"write elsewhere", act("Write", map[string]any{"file_path": "/etc/hosts", "content": "x"}), action.Confirm},
		{"write escaping the tree", act("Write", map[string]any{"file_path": "../other/x"}), action.Confirm},
		{"delete", act("delete_file", map[string]any{"path": "a.txt"}), action.Approve},
		{"unknown tool", act("frobnicate", map[string]any{}), action.Confirm},
		{"mcp", act("mcp__github__create_issue", map[string]any{}), action.Confirm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := e.Evaluate(context.Background(), tt.a)
			if v.Level != tt.want {
				t.Fatalf("level = %s, want %s (%s)", v.Level, tt.want, v.Summary())
			}
			if v.Decider == nil {
				t.Fatal("verdict has no decider")
			}
			if v.ArgsHash == "" {
				t.Fatal("verdict has no args hash")
			}
		})
	}
}

// stubGuard is a guard with scripted findings: it stands in for the real
// guards to exercise the engine's combination rules and failure paths.
type stubGuard struct {
	findings []guard.Finding
	err      error
	panics   bool
}

func (g *stubGuard) Name() string { return "stub" }
func (g *stubGuard) Check(_ context.Context, a *action.Action) ([]guard.Finding, error) {
	if g.panics {
		panic("boom")
	}
	return g.findings, g.err
}

func userRule(t *testing.T, st store.RuleStore, r policy.Rule) {
	t.Helper()
	raw, err := jsonMarshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutUserRule(context.Background(), &store.UserRule{ID: r.Name, Rule: raw, Origin: "human", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

func TestLayerCombination(t *testing.T) {
	const admin = `
version: 1
rules:
  - name: deploy-needs-confirm
    tool: deploy
    level: confirm
`
	tests := []struct {
		name     string
		locked   bool
		tool     string
		user     action.Level
		findings []guard.Finding
		want     action.Level
		decider  action.Source
	}{
		{name: "admin rule alone", tool: "deploy", want: action.Confirm, decider: action.SourceRule},
		{name: "user cannot loosen admin rule", tool: "deploy", user: action.Auto, want: action.Confirm},
		{name: "user can tighten admin rule", tool: "deploy", user: action.Approve, want: action.Approve},
		{name: "user may loosen a default", tool: "frob", user: action.Auto, want: action.Auto},
		{name: "locked: user cannot loosen a default", locked: true, tool: "frob", user: action.Auto, want: action.Confirm},
		{name: "soft guard classification replaces default", tool: "frob",
			findings: []guard.Finding{{Check: "stub.readonly", Level: action.Auto}}, want: action.Auto, decider: action.SourceGuard},
		{name: "admin rule beats soft classification", tool: "deploy",
			findings: []guard.Finding{{Check: "stub.readonly", Level: action.Auto}}, want: action.Confirm},
		{name: "hard floor beats user rule", tool: "frob", user: action.Auto,
			findings: []guard.Finding{{Check: "stub.rm-root", Level: action.Block, Hard: true}}, want: action.Block, decider: action.SourceGuard},
		{name: "block is always a floor", tool: "frob", user: action.Auto,
			findings: []guard.Finding{{Check: "stub.x", Level: action.Block}}, want: action.Block},
		{name: "hard approve floor beats admin confirm", tool: "deploy",
			findings: []guard.Finding{{Check: "stub.wildcard", Level: action.Approve, Hard: true}}, want: action.Approve},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := admin
			if tt.locked {
				y += "locked: true\n"
			}
			st := openStore(t)
			if tt.user.Valid() {
				userRule(t, st, policy.Rule{Name: "u1", Tool: []string{tt.tool}, Level: tt.user})
			}
			e := newEngine(t, firewall.Config{Policy: mustPolicy(t, y), Rules: st,
				Guards: []guard.Guard{&stubGuard{findings: tt.findings}}})
			v := e.Evaluate(context.Background(), act(tt.tool, map[string]any{"x": 1}))
			if v.Level != tt.want {
				t.Fatalf("level = %s, want %s; reasons %+v", v.Level, tt.want, v.Reasons)
			}
			if tt.decider != "" && (v.Decider == nil || v.Decider.Source != tt.decider) {
				t.Fatalf("decider = %+v, want source %s", v.Decider, tt.decider)
			}
		})
	}
}

// failingRules is a user layer whose store fails.
type failingRules struct{ store.RuleStore }

func (failingRules) RulesVersion(context.Context) (int64, error) {
	return 0, errors.New("disk on fire")
}
func (failingRules) ListUserRules(context.Context, time.Time) ([]store.UserRule, error) {
	return nil, errors.New("disk on fire")
}

func TestFailClosed(t *testing.T) {
	ctx := context.Background()
	autoAll := mustPolicy(t, `
version: 1
extends: none
defaults: {shell: auto, other: auto, file_read: auto}
rules:
  - name: cel-runtime-error
    tool: risky
    when: 'args.missing == "x"'
    level: auto
`)
	tests := []struct {
		name string
		cfg  firewall.Config
		a    *action.Action
	}{
		{"guard error", firewall.Config{Policy: autoAll, Guards: []guard.Guard{&stubGuard{err: errors.New("parser crashed")}}},
			act("frob", nil)},
		{"guard panic", firewall.Config{Policy: autoAll, Guards: []guard.Guard{&stubGuard{panics: true}}},
			act("frob", nil)},
		{"guard finding with unset level", firewall.Config{Policy: autoAll, Guards: []guard.Guard{&stubGuard{
			findings: []guard.Finding{{Check: "stub.unset"}}}}}, act("frob", nil)},
		{"CEL runtime error", firewall.Config{Policy: autoAll}, act("risky", map[string]any{"y": 1})},
		{"no tool name", firewall.Config{Policy: autoAll}, act("", nil)},
		{"unknown kind", firewall.Config{Policy: autoAll}, &action.Action{Tool: "frob", Kind: "teleport"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, tt.cfg)
			v := e.Evaluate(ctx, tt.a)
			if v.Level.RunsWithoutPerson() {
				t.Fatalf("level = %s: a failed evaluation must not run without a person; reasons %+v", v.Level, v.Reasons)
			}
		})
	}
	t.Run("user layer unreadable", func(t *testing.T) {
		_, err := firewall.New(ctx, firewall.Config{Policy: autoAll, Rules: failingRules{}})
		if err == nil {
			t.Fatal("New succeeded with an unreadable user layer")
		}
	})
	t.Run("user layer breaks after start", func(t *testing.T) {
		st := openStore(t)
		e := newEngine(t, firewall.Config{Policy: autoAll, Rules: st})
		userRule(t, st, policy.Rule{Name: "bad"}) // stored behind the engine's back: no level
		if err := e.Reload(ctx); err == nil {
			t.Fatal("Reload accepted an invalid user rule")
		}
		v := e.Evaluate(ctx, act("frob", nil))
		if v.Level.RunsWithoutPerson() {
			t.Fatalf("level = %s with a broken user layer", v.Level)
		}
	})
}

func TestParamsLayer(t *testing.T) {
	p := mustPolicy(t, "version: 1\nsettings: {params: {max_arg_bytes: 100}}\n")
	e := newEngine(t, firewall.Config{Policy: p})
	v := e.Evaluate(context.Background(), act("Read", map[string]any{"file_path": "a", "pad": strings.Repeat("x", 200)}))
	if v.Level != action.Confirm || v.Decider.Name != "max-arg-bytes" {
		t.Fatalf("oversized arguments: %s by %+v", v.Level, v.Decider)
	}
}

func TestSelfProtection(t *testing.T) {
	home := "/home/dev/.overseer"
	e := newEngine(t, firewall.Config{Protected: []string{home}})
	for _, p := range []string{home + "/overseer.db", home, home + "/token"} {
		v := e.Evaluate(context.Background(), act("Write", map[string]any{"file_path": p}))
		if v.Level != action.Block {
			t.Errorf("write %s: %s, want block", p, v.Level)
		}
	}
	v := e.Evaluate(context.Background(), act("Read", map[string]any{"file_path": "/home/dev/.overseer2/x"}))
	if v.Level == action.Block {
		t.Errorf("a sibling of the home directory is blocked")
	}
}

func TestLoopDetection(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	bus := perception.New(openStore(t), clk)
	p := mustPolicy(t, `
version: 1
defaults: {other: auto}
settings: {loop: {window: 1m, same_args: 3, same_tool: 5}}
`)
	e := newEngine(t, firewall.Config{Policy: p, Signals: bus, Clock: clk})
	run := func(a *action.Action) action.Verdict {
		v := e.Evaluate(ctx, a)
		bus.RecordAction(firewall.SessionKey(a), a.Tool, v.ArgsHash)
		return v
	}
	same := func() *action.Action { return act("poll", map[string]any{"n": 1}) }
	if v := run(same()); v.Level != action.Auto {
		t.Fatalf("first call: %s", v.Level)
	}
	run(same())
	if v := run(same()); v.Level != action.Confirm || v.Decider.Name != "same-args" {
		t.Fatalf("third identical call: %s by %+v, want confirm by same-args", v.Level, v.Decider)
	}
	clk.Advance(2 * time.Minute) // the window moves on
	if v := run(same()); v.Level != action.Auto {
		t.Fatalf("after the window: %s", v.Level)
	}
	for i := 0; i < 3; i++ {
		run(act("poll", map[string]any{"n": 10 + i}))
	}
	if v := run(act("poll", map[string]any{"n": 99})); v.Level != action.Confirm || v.Decider.Name != "same-tool" {
		t.Fatalf("fifth call of the tool: %s by %+v", v.Level, v.Decider)
	}
	// Low confidence tightens the thresholds: two identical calls suffice.
	low := 0.2
	a1 := act("other", map[string]any{"k": 1})
	a1.Session = "s2"
	a1.Confidence = &low
	run(a1)
	a2 := act("other", map[string]any{"k": 1})
	a2.Session = "s2"
	a2.Confidence = &low
	if v := run(a2); v.Level != action.Confirm {
		t.Fatalf("second identical low-confidence call: %s", v.Level)
	}
}

func TestMetacognition(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := openStore(t)
	bus := perception.New(st, clk)
	p := mustPolicy(t, "version: 1\ndefaults: {other: auto}\nsettings: {metacognition: {low_confidence: 0.5, streak: 3}, loop: {same_args: 100, same_tool: 100}}\n")
	e := newEngine(t, firewall.Config{Policy: p, Signals: bus, Clock: clk})
	conf := func(c float64, i int) *action.Action {
		a := act("think", map[string]any{"i": i})
		a.Confidence = &c
		return a
	}
	for i, c := range []float64{0.3, 0.4} {
		a := conf(c, i)
		if v := e.Evaluate(ctx, a); v.Level != action.Auto {
			t.Fatalf("low confidence #%d alone: %s", i+1, v.Level)
		}
		bus.RecordConfidence(firewall.SessionKey(a), c)
	}
	if v := e.Evaluate(ctx, conf(0.2, 3)); v.Level != action.Confirm || v.Decider.Source != action.SourceMeta {
		t.Fatalf("third low confidence in a row: %s by %+v", v.Level, v.Decider)
	}
	if v := e.Evaluate(ctx, conf(0.9, 4)); v.Level != action.Auto {
		t.Fatalf("a confident decision: %s", v.Level)
	}

	// Hesitation: a slow answer adds a hint for the agent, without raising the level.
	if _, err := bus.RecordAnswer(ctx, "think", true, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	v := e.Evaluate(ctx, conf(0.9, 5))
	if len(v.Hints) == 0 || !strings.Contains(v.Hints[0], "explain") {
		t.Fatalf("no hesitation hint after a slow answer: %+v", v.Hints)
	}
}

func TestAdaptation(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := openStore(t)
	bus := perception.New(st, clk)
	p := mustPolicy(t, "version: 1\nsettings: {adaptation: {escalate_after: 3, revert_after: 2}}\n")
	e := newEngine(t, firewall.Config{Policy: p, Rules: st, Signals: bus, Clock: clk})
	a := func() *action.Action { return act("deploy", map[string]any{"env": "prod"}) }
	if v := e.Evaluate(ctx, a()); v.Level != action.Confirm {
		t.Fatalf("before: %s", v.Level)
	}
	var change *firewall.Change
	for i := 0; i < 3; i++ {
		stats, err := bus.RecordAnswer(ctx, "deploy", false, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		change, err = e.Adapt(ctx, "deploy", action.Confirm, stats)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 && change != nil {
			t.Fatalf("escalated after %d rejections", i+1)
		}
	}
	if change == nil || change.Before != action.Confirm || change.After != action.Approve {
		t.Fatalf("no escalation after three rejections: %+v", change)
	}
	v := e.Evaluate(ctx, a())
	if v.Level != action.Approve || v.Decider.Source != action.SourceAdaptive {
		t.Fatalf("after escalation: %s by %+v", v.Level, v.Decider)
	}
	// The admin layer is never touched.
	for _, r := range e.Policy().Rules {
		if strings.HasPrefix(r.Name, firewall.AdaptivePrefix) {
			t.Fatal("adaptation wrote to the admin layer")
		}
	}
	for i := 0; i < 2; i++ {
		stats, err := bus.RecordAnswer(ctx, "deploy", true, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		change, err = e.Adapt(ctx, "deploy", action.Approve, stats)
		if err != nil {
			t.Fatal(err)
		}
	}
	if change == nil || change.After != action.Unset {
		t.Fatalf("no revert after two approvals: %+v", change)
	}
	if v := e.Evaluate(ctx, a()); v.Level != action.Confirm {
		t.Fatalf("after revert: %s", v.Level)
	}
}

func TestApprovePreview(t *testing.T) {
	e := newEngine(t, firewall.Config{})
	v := e.Evaluate(context.Background(), act("delete_file", map[string]any{"path": "old.txt"}))
	if v.Level != action.Approve || v.Preview == nil || len(v.Preview.Items) != 1 || !strings.Contains(v.Preview.Items[0], cwd+"/old.txt") {
		t.Fatalf("approve without a useful preview: %s %+v", v.Level, v.Preview)
	}
}

func TestArgsHashBindsExactArguments(t *testing.T) {
	e := newEngine(t, firewall.Config{})
	v1 := e.Evaluate(context.Background(), act("Bash", map[string]any{"command": "rm -rf build"}))
	v2 := e.Evaluate(context.Background(), act("Bash", map[string]any{"command": "rm -rf build "}))
	if v1.ArgsHash == v2.ArgsHash {
		t.Fatal("different arguments hash alike")
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// A command's local_cluster fact is the shell guard's to set: one a caller
// brings is cleared before the guards run, so the built-in deploy rule
// still applies.
func TestLocalClusterFactNotTakenFromCaller(t *testing.T) {
	e := newEngine(t, firewall.Config{})
	a := act("Bash", map[string]any{"command": "kubectl --context kind-dev apply -k k8s/overlays/dev"})
	a.Kind = action.KindShell
	a.Facts.Commands = []action.Command{{Name: "kubectl", Args: []string{"--context", "kind-dev", "apply", "-k", "k8s/overlays/dev"},
		LocalCluster: true}}
	v := e.Evaluate(context.Background(), a)
	if v.Level != action.Approve || v.Decider == nil || v.Decider.Name != "builtin-deploy" {
		t.Fatalf("a forged local_cluster fact: %s", v.Summary())
	}
}
