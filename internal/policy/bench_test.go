package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// hundredRules is a 100-rule policy: tool globs that a shell action fails
// early, CEL conditions over args and facts that it must evaluate, and the
// rule it matches at position 98.
func hundredRules() string { return hundredRulesWith(`facts.commands.exists(c, c.name == "cmd%d")`) }

// hundredRulesWith writes the command conditions with cmdCond, a format
// taking the rule's number.
func hundredRulesWith(cmdCond string) string {
	var b strings.Builder
	b.WriteString("extends: none\nrules:\n")
	for i := range 100 {
		fmt.Fprintf(&b, "  - name: r%d\n", i)
		switch {
		case i == 97:
			b.WriteString("    kind: shell\n    when: 'facts.commands.exists(c, c.name == \"git\" && \"push\" in c.args)'\n    level: approve\n")
		case i%4 == 0:
			fmt.Fprintf(&b, "    tool: [\"mcp__svc%d__*\", \"Tool%d\"]\n    level: confirm\n", i, i)
		case i%4 == 1:
			fmt.Fprintf(&b, "    kind: shell\n    when: 'args.command.contains(\"pattern-%d\")'\n    level: confirm\n", i)
		case i%4 == 2:
			fmt.Fprintf(&b, "    kind: shell\n    when: '%s'\n    level: approve\n", fmt.Sprintf(cmdCond, i))
		default:
			fmt.Fprintf(&b, "    tool: \"b*\"\n    agent: \"agent-%d-*\"\n    level: notify\n", i)
		}
	}
	return b.String()
}

func benchAction() *action.Action {
	return &action.Action{
		Tool: "Bash", Kind: action.KindShell, Agent: "claude-code", Session: "sess-1", Cwd: "/home/dev/p",
		Args: map[string]any{"command": "git push origin main", "description": "push the fix"},
		Facts: action.Facts{Commands: []action.Command{{Name: "git", Args: []string{"push", "origin", "main"}}},
			Paths: []action.PathFact{{Path: "/home/dev/p", Intent: action.PathRead, InCwd: true}}},
	}
}

func BenchmarkFirst100Rules(b *testing.B) { benchFirst(b, hundredRules()) }

// BenchmarkFirst100RulesNoPrefilter writes the command conditions in a form
// the command-name prefilter does not recognise: every one runs CEL.
func BenchmarkFirst100RulesNoPrefilter(b *testing.B) {
	benchFirst(b, hundredRulesWith(`facts.commands.exists(c, c.name.startsWith("cmd%d"))`))
}

func benchFirst(b *testing.B, policy string) {
	p, err := Parse("bench.yaml", []byte(policy), Options{})
	if err != nil {
		b.Fatal(err)
	}
	if len(p.Rules) != 100 {
		b.Fatalf("%d rules", len(p.Rules))
	}
	a := benchAction()
	c, err := First(p.Rules, a)
	if err != nil || c == nil || c.Name != "r97" {
		b.Fatalf("First = %v, %v", ruleName(c), err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := First(p.Rules, a); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFirstBuiltin(b *testing.B) {
	p := Builtin()
	a := benchAction()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := First(p.Rules, a); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseBuiltin(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parse("builtin", builtinYAML, Options{}, LayerBuiltin); err != nil {
			b.Fatal(err)
		}
	}
}
