package policy

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// fuzzAction is matched against every policy the fuzzer manages to parse.
func fuzzAction() *action.Action {
	c := 0.4
	return &action.Action{Tool: "Bash", Kind: action.KindShell, Agent: "claude-code", Session: "s", Cwd: "/p",
		Args: map[string]any{"command": "git push --force", "n": 3.0}, Confidence: &c,
		Facts: action.Facts{Commands: []action.Command{{Name: "git", Args: []string{"push", "--force"}}},
			Paths: []action.PathFact{{Path: "/p/x", Intent: action.PathWrite, InCwd: true}}}}
}

func FuzzParse(f *testing.F) {
	for _, tc := range invalidCases(f) {
		f.Add(tc.data)
	}
	f.Add(builtinYAML)
	files, _ := filepath.Glob(filepath.Join("testdata", "match", "*.yaml"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("extends: none\ndefaults: {shell: auto}\nrules: [{name: r, tool: 'B*', when: 'glob(\"g*\", args.command)', level: auto}]\n"))
	f.Add([]byte("rules:\n  - name: a\n    tool: &t [x]\n    level: auto\n  - {name: b, tool: *t, level: block}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data, Options{})
		if err != nil {
			return
		}
		for _, k := range []action.Kind{"", "unknown", "SHELL"} {
			if got := p.Default(k); got != action.Confirm {
				t.Fatalf("Default(%q) = %s, want confirm", k, got)
			}
		}
		for _, k := range action.Kinds {
			if !p.Default(k).Valid() {
				t.Fatalf("Default(%s) = %s", k, p.Default(k))
			}
		}
		for _, c := range p.Rules {
			if !c.Level.Valid() || c.Name == "" {
				t.Fatalf("rule %q has level %s", c.Name, c.Level)
			}
		}
		_, _ = First(p.Rules, fuzzAction())
		_ = Trace(p.Rules, fuzzAction())
		_ = p.Test()
	})
}

func FuzzDecodeRuleJSON(f *testing.F) {
	f.Add([]byte(`{"name":"r","tool":["Bash"],"level":"approve","when":"args.command.contains(\"x\")"}`))
	f.Add([]byte(`{"name":"r","session":"s","args_hash":"ab","level":"auto","match":[{"tool":"x","session":"s"}]}`))
	f.Add([]byte(`{"name":"r","kind":["shell"],"agent":["*"],"level":"block","not_match":[{"tool":"Read"}]}`))
	f.Add([]byte(`{"levle":"auto"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeRuleJSON(data)
		if err != nil {
			return
		}
		cs, err := CompileRules(LayerUser, []Rule{r}, Options{})
		if err != nil {
			return
		}
		if len(cs) != 1 || !cs[0].Level.Valid() {
			t.Fatalf("compiled %d rules, level %s", len(cs), r.Level)
		}
		_, _ = cs[0].Matches(fuzzAction())
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30s", "10m", "1h30m", "0", "", "30", "-1s", "1.5h", "9999999999h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("round trip of %q: %v, %v", s, back, err)
		}
	})
}
