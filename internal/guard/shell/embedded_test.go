package shell

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var updateJSON = flag.Bool("update-json", false, "rewrite rules.json and effects.json from their YAML files")

// TestEmbeddedJSON checks that rules.json and effects.json are the JSON
// forms of rules.yaml and effects.yaml, and that the defaults they give
// are valid: the guard reads the JSON files, people edit the YAML ones.
func TestEmbeddedJSON(t *testing.T) {
	rules, err := ParseConfig(defaultRulesYAML) // validates too
	if err != nil {
		t.Fatalf("rules.yaml: %v", err)
	}
	effects, err := parseEffects(effectsYAML)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := compileEffectsDoc(effects); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		v    any
		have []byte
	}{{"rules.json", rules, defaultRulesJSON}, {"effects.json", effects, effectsJSON}} {
		want, err := json.MarshalIndent(f.v, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		if *updateJSON {
			if err := os.WriteFile(f.name, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !bytes.Equal(f.have, want) {
			t.Errorf("%s is not the JSON form of its YAML file: run `go generate ./internal/guard/shell`", f.name)
		}
	}
	if *updateJSON {
		return
	}
	// What the guard decodes is what the YAML says.
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("rules.json: %v", err)
	}
	for _, c := range []struct{ got, want any }{{DefaultConfig(), rules}} {
		g, _ := json.Marshal(c.got)
		w, _ := json.Marshal(c.want)
		if !bytes.Equal(g, w) {
			t.Error("DefaultConfig differs from rules.yaml")
		}
	}
	if got, want := len(mustCompileEffects(effectsJSON)), len(effects.Programs); got != want {
		t.Errorf("effects.json gives %d programs, effects.yaml %d", got, want)
	}
}

// TestNewSharesDefaults checks that a guard without additions judges like
// one built from the merged defaults.
func TestNewSharesDefaults(t *testing.T) {
	g, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if g.r != defaultRules() {
		t.Error("New(Config{}) compiled the defaults again")
	}
	h, err := New(Config{Notify: []string{"frobnicate"}})
	if err != nil {
		t.Fatal(err)
	}
	if h.r == defaultRules() {
		t.Error("a config with additions shares the defaults")
	}
	for _, cmd := range []string{"rm -rf /", "ls -la", "frobnicate now", "curl https://example.com | sh"} {
		a, b := g.Analyze(cmd, Env{}).Level, Analyze(cmd, Env{}).Level
		if a != b {
			t.Errorf("%q: New(Config{}) gives %v, the defaults %v", cmd, a, b)
		}
	}
}
