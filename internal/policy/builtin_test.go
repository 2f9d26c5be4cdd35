package policy

import (
	"errors"
	"reflect"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

func TestBuiltinExamplesPass(t *testing.T) {
	p := Builtin()
	results := p.Test()
	if len(results) == 0 {
		t.Fatal("the built-in policy has no examples")
	}
	levelChecks := 0
	for _, r := range results {
		if !r.Pass {
			t.Errorf("%s %s example %d (line %d): want %s, got %s", r.Rule, r.Check, r.Index+1, r.Line, r.Want, r.Got)
		}
		if r.Line <= 0 {
			t.Errorf("%s %s example %d has no line", r.Rule, r.Check, r.Index+1)
		}
		if r.Check == CheckLevel {
			levelChecks++
		}
	}
	if levelChecks == 0 {
		t.Error("no example checks a level")
	}
}

func TestBuiltinEveryRuleHasExamples(t *testing.T) {
	for _, c := range Builtin().Rules {
		t.Run(c.Name, func(t *testing.T) {
			if len(c.Match) == 0 || len(c.NotMatch) == 0 {
				t.Errorf("%d match and %d not_match examples; want both", len(c.Match), len(c.NotMatch))
			}
			if c.Message == "" {
				t.Error("no message")
			}
			if c.Layer != LayerBuiltin || c.Line <= 0 {
				t.Errorf("layer %q line %d", c.Layer, c.Line)
			}
			if c.Level == action.Auto {
				t.Error("a built-in rule must not allow outright; defaults and guards do that")
			}
		})
	}
}

func TestBuiltinHeader(t *testing.T) {
	p := Builtin()
	if p.Name != LayerBuiltin || p.Extends != ExtendsNone || p.Locked || p != Builtin() {
		t.Errorf("name %q extends %q locked %v, or not compiled once", p.Name, p.Extends, p.Locked)
	}
	if !reflect.DeepEqual(p.Settings, DefaultSettings()) {
		t.Errorf("settings = %+v, want DefaultSettings", p.Settings)
	}
	want := DefaultSettings()
	if want.Loop.Window.Std().String() != "5m0s" || want.Loop.SameArgs != 3 || want.Loop.SameTool != 20 ||
		want.Loop.Level != action.Confirm || want.Loop.LowConfidence != 0.5 || want.Meta.LowConfidence != 0.5 ||
		want.Meta.Streak != 3 || want.Gate.Timeout.Std().String() != "10m0s" || want.Gate.Default != "deny" ||
		want.Adapt.EscalateAfter != 3 || want.Adapt.RevertAfter != 5 || want.Adapt.HesitationAfter.Std().String() != "30s" ||
		want.Params.MaxArgBytes != 1048576 {
		t.Errorf("DefaultSettings = %+v", want)
	}
}

func TestBuiltinDefaults(t *testing.T) {
	want := map[action.Kind]action.Level{
		action.KindFileRead:   action.Auto,
		action.KindFileWrite:  action.Confirm,
		action.KindFileEdit:   action.Confirm,
		action.KindFileDelete: action.Approve,
		action.KindShell:      action.Confirm,
		action.KindNetFetch:   action.Notify,
		action.KindSQL:        action.Confirm,
		action.KindMCP:        action.Confirm,
		action.KindPrompt:     action.Confirm,
		action.KindOther:      action.Confirm,
	}
	p := Builtin()
	for _, k := range action.Kinds {
		t.Run(string(k), func(t *testing.T) {
			if got := p.Default(k); got != want[k] {
				t.Errorf("Default(%s) = %s, want %s", k, got, want[k])
			}
		})
	}
}

// TestBuiltinDecisions checks the built-in policy's decisions on actions as
// the analyzers would present them: ordinary work is not interrupted more
// than the defaults say, and every irreversible action waits for approval.
func TestBuiltinDecisions(t *testing.T) {
	shell := func(name string, args ...string) *action.Action {
		return &action.Action{Tool: "Bash", Kind: action.KindShell, Cwd: "/home/dev/p",
			Args:  map[string]any{"command": name},
			Facts: action.Facts{Commands: []action.Command{{Name: "sh-prelude"}, {Name: name, Args: args}}}}
	}
	file := func(kind action.Kind, paths ...action.PathFact) *action.Action {
		return &action.Action{Tool: "tool", Kind: kind, Cwd: "/home/dev/p", Args: map[string]any{}, Facts: action.Facts{Paths: paths}}
	}
	in := func(p string) action.PathFact {
		return action.PathFact{Path: "/home/dev/p/" + p, Intent: action.PathWrite, InCwd: true}
	}
	out := func(p string) action.PathFact { return action.PathFact{Path: p, Intent: action.PathWrite} }
	tests := []struct {
		name string
		a    *action.Action
		want action.Level
		rule string // "" for the kind default
	}{
		{"read a file", file(action.KindFileRead, action.PathFact{Path: "/etc/hosts", Intent: action.PathRead}), action.Auto, ""},
		{"write in the project", file(action.KindFileWrite, in("main.go")), action.Notify, "builtin-write-in-workdir"},
		{"edit two files in the project", file(action.KindFileEdit, in("a.go"), in("b/c.go")), action.Notify, "builtin-write-in-workdir"},
		{"write with no path facts", file(action.KindFileWrite), action.Confirm, ""},
		{"write outside", file(action.KindFileWrite, out("/etc/cron.d/x")), action.Confirm, ""},
		{"edit in and outside", file(action.KindFileEdit, in("a.go"), out("/home/dev/.bashrc")), action.Confirm, ""},
		{"write a git hook", file(action.KindFileWrite, in(".git/hooks/pre-push")), action.Confirm, ""},
		{"write the .git file", file(action.KindFileWrite, in(".git")), action.Confirm, ""},
		{"delete in the project", file(action.KindFileDelete, in("tmp.txt")), action.Approve, "builtin-delete"},
		{"ordinary shell", shell("go", "test", "./..."), action.Confirm, ""},
		{"git push in a compound command", shell("git", "push", "--force"), action.Approve, "builtin-git-push"},
		{"npm publish", shell("npm", "publish"), action.Approve, "builtin-publish"},
		{"podman push", shell("podman", "push", "img"), action.Approve, "builtin-publish"},
		{"tofu destroy", shell("tofu", "destroy"), action.Approve, "builtin-deploy"},
		{"kubectl delete", shell("kubectl", "delete", "ns", "prod"), action.Approve, "builtin-deploy"},
		{"kubectl get", shell("kubectl", "get", "ns"), action.Confirm, ""},
		{"kubectl apply", shell("kubectl", "apply", "-k", "k8s/overlays/dev"), action.Approve, "builtin-deploy"},
		{"kubectl apply the shell guard placed on a local cluster", func() *action.Action {
			a := shell("kubectl", "--context", "kind-dev", "apply", "-k", "k8s/overlays/dev")
			a.Facts.Commands[1].LocalCluster = true
			return a
		}(), action.Confirm, ""},
		{"a local apply beside a remote one", func() *action.Action {
			a := shell("kubectl", "--context", "kind-dev", "apply", "-k", "k8s/overlays/dev")
			a.Facts.Commands[1].LocalCluster = true
			a.Facts.Commands = append(a.Facts.Commands, action.Command{Name: "kubectl", Args: []string{"--context", "prod", "apply", "-k", "k8s/overlays/dev"}})
			return a
		}(), action.Approve, "builtin-deploy"},
		{"fetch", &action.Action{Tool: "WebFetch", Kind: action.KindNetFetch, Args: map[string]any{"url": "https://go.dev"}}, action.Notify, ""},
		{"mcp tool", &action.Action{Tool: "mcp__x__y", Kind: action.KindMCP, Args: map[string]any{}}, action.Confirm, ""},
		{"unknown kind", &action.Action{Tool: "x", Kind: "teleport"}, action.Confirm, ""},
		{"no kind", &action.Action{Tool: "x"}, action.Confirm, ""},
	}
	p := Builtin()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lvl, decider, err := p.decide(tc.a)
			if err != nil {
				t.Fatal(err)
			}
			wantDecider := tc.rule
			if wantDecider == "" {
				wantDecider = "default"
			}
			if lvl != tc.want || decider != wantDecider {
				t.Errorf("decision = %s by %s, want %s by %s", lvl, decider, tc.want, wantDecider)
			}
		})
	}
}

// TestExtendingPolicyTest runs Test on a file that extends the built-in
// default: the built-in rules' examples are reported too.
func TestExtendingPolicyTest(t *testing.T) {
	p, err := Parse("x.yaml", []byte(`rules:
  - name: mine
    tool: Bash
    when: 'args.command.startsWith("make")'
    level: notify
    match: [{tool: Bash, args: {command: make}, level: notify}]
    not_match: [{tool: Bash, args: {command: git push}, level: approve}]
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]bool{}
	for _, r := range p.Test() {
		rules[r.Rule] = true
		if !r.Pass {
			t.Errorf("%+v", r)
		}
	}
	if !rules["mine"] || !rules["builtin-git-push"] {
		t.Errorf("Test covered %v", rules)
	}
}

func TestPolicyTestReportsFailures(t *testing.T) {
	// A level expectation is only checked by Test, so the policy loads.
	p, err := Parse("x.yaml", []byte(`extends: none
rules:
  - name: r
    tool: Bash
    level: notify
    match: [{tool: Bash, level: approve}]
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := p.Test()
	if len(res) != 2 {
		t.Fatalf("got %d results, want 2: %+v", len(res), res)
	}
	if !res[0].Pass || res[0].Check != CheckMatch {
		t.Errorf("match check: %+v", res[0])
	}
	r := res[1]
	if r.Pass || r.Check != CheckLevel || r.Want != "approve" || r.Got != "notify" || r.Decider != "r" || r.Line != 6 {
		t.Errorf("level check: %+v", r)
	}
}

// TestBuiltinConditionsCompile compiles every condition of the built-in
// policy, which a process compiles only when a rule reaches it.
func TestBuiltinConditionsCompile(t *testing.T) {
	n := 0
	for _, c := range Builtin().Rules {
		if c.When == "" {
			continue
		}
		if c.cond != nil || c.lazyCond == nil {
			t.Errorf("%s: the condition was compiled at load", c.Name)
		}
		p, err := c.condition()
		if err != nil || p == nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("the built-in policy has no condition")
	}
}

// TestBuiltinBrokenConditionFailsClosed: a built-in condition that does
// not compile makes matching its rule an error (the engine then fails
// closed), never a silent match or miss.
func TestBuiltinBrokenConditionFailsClosed(t *testing.T) {
	cs, err := compileBuiltinForTest(`version: 1
rules:
  - name: broken
    kind: shell
    when: 'args.command.startsWith('
    level: auto
`)
	if err != nil {
		t.Fatal(err)
	}
	a := &action.Action{Kind: action.KindShell, Tool: "Bash", Args: map[string]any{"command": "echo hi"}}
	if _, err := First(cs.Rules, a); err == nil || !errors.Is(err, ErrEval) {
		t.Fatalf("First = %v, want an evaluation error", err)
	}
}

func compileBuiltinForTest(src string) (*Policy, error) {
	return parse(LayerBuiltin, []byte(src), Options{SkipExamples: true}, LayerBuiltin)
}
