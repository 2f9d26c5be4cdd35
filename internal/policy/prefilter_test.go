package policy

import (
	"reflect"
	"testing"

	"cel.dev/cel-go/common/types"

	"github.com/overseer-dev/overseer/internal/action"
)

func TestCommandPrefilterExtraction(t *testing.T) {
	tests := []struct {
		name, when string
		want       []string
	}{
		{"equals", `facts.commands.exists(c, c.name == "git")`, []string{"git"}},
		{"equals reversed", `facts.commands.exists(c, "git" == c.name && "push" in c.args)`, []string{"git"}},
		{"in list", `facts.commands.exists(x, x.name in ["npm", "yarn", "npm"])`, []string{"npm", "yarn"}},
		{"alternatives", `facts.commands.exists(c, (c.name == "git" && "push" in c.args) || (c.name in ["docker"] && true))`, []string{"docker", "git"}},
		{"a conjunct of the whole", `kind == "shell" && facts.commands.exists(c, c.name == "rm") && args.x == 1`, []string{"rm"}},
		{"builtin publish", Builtin().Rules[2].When, []string{"cargo", "docker", "gh", "npm", "pnpm", "podman", "twine", "yarn"}},
		{"one alternative without a name", `facts.commands.exists(c, c.name == "git" || c.dynamic)`, nil},
		{"under an or", `facts.commands.exists(c, c.name == "git") || tool == "x"`, nil},
		{"negated", `!facts.commands.exists(c, c.name == "git")`, nil},
		{"all", `facts.commands.all(c, c.name == "git")`, nil},
		{"exists_one", `facts.commands.exists_one(c, c.name == "git")`, nil},
		{"not equals", `facts.commands.exists(c, c.name != "git")`, nil},
		{"another variable's name", `facts.commands.exists(c, [{"name": "x"}].exists(d, d.name == "git"))`, nil},
		{"non-literal", `facts.commands.exists(c, c.name == tool)`, nil},
		{"other list", `facts.paths.exists(c, c.name == "git")`, nil},
		{"two variables", `facts.commands.exists(i, c, c.name == "git")`, nil},
		{"empty in list", `facts.commands.exists(c, c.name in [])`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := compileCEL(tc.when)
			if err != nil {
				if tc.want == nil {
					return // not valid CEL here: no prefilter either way
				}
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.commands, tc.want) {
				t.Errorf("prefilter = %q, want %q", p.commands, tc.want)
			}
		})
	}
}

// TestCommandPrefilterSound checks, for conditions with a prefilter, that
// whenever the prefilter skips an action, CEL itself would say false (not
// true, not an error).
func TestCommandPrefilterSound(t *testing.T) {
	conds := []string{
		`facts.commands.exists(c, c.name == "git" && "push" in c.args)`,
		`facts.commands.exists(c, c.name == "git" && c.args[3] == "x")`,
		`args.missing == "x" && facts.commands.exists(c, c.name == "rm")`,
		`facts.commands.exists(c, c.name == "rm") && args.missing == "x"`,
		`facts.commands.exists(c, (c.name in ["a", "b"] && c.args[9] == "z") || (c.name == "d" && int(c.args[0]) > 1))`,
	}
	own := len(conds) // these must have a prefilter; the built-in's may not
	for _, c := range Builtin().Rules {
		if c.When != "" {
			conds = append(conds, c.When)
		}
	}
	cmds := [][]action.Command{
		nil,
		{{Name: "ls"}},
		{{Name: "gitx", Args: []string{"push"}}},
		{{Name: "Git", Args: []string{"push"}}},
		{{Name: "git", Args: []string{"push"}}},
		{{Name: "echo"}, {Name: "rm", Args: []string{"-rf", "x"}}},
		{{Name: "a", Args: []string{"1"}}, {Name: "d", Args: []string{"x"}}},
		{{Name: "npm", Args: []string{"publish"}}, {Name: "kubectl", Args: []string{"apply"}}},
	}
	for i, when := range conds {
		p, err := compileCEL(when)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if p.commands == nil {
			if i < own {
				t.Errorf("%s: no prefilter", when)
			}
			continue
		}
		for _, cs := range cmds {
			a := &action.Action{Tool: "Bash", Kind: action.KindShell, Args: map[string]any{}, Facts: action.Facts{Commands: cs}}
			s := newSubject(a)
			if s.hasCommand(p.commands) {
				continue
			}
			out, _, err := p.prg.Eval(s)
			if err != nil || out != types.False {
				t.Errorf("%s on %v: prefilter skips, but CEL says %v, %v", when, cs, out, err)
			}
		}
	}
}
