package shell

import (
	"bytes"
	"flag"
	"go/format"
	"os"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

var updateJSON = flag.Bool("update-json", false, "rewrite rules.bin, config.bin, effects.bin and selfapi_gen.go from their YAML files")

// genTable is a generated file holding fn, which returns the Go literal of
// v, decoded from the YAML file src.
func genTable(src, fn string, v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	code := "// Code generated from " + src + " by `go generate` (TestEmbeddedJSON); DO NOT EDIT.\n\n" +
		"package shell\n\n" +
		"// " + fn + " is " + src + ", decoded.\n" +
		"func " + fn + "() " + localName(rv.Type()) + " {\n\treturn " + goLiteral(rv) + "\n}\n"
	// Formatting twice: one pass can leave the alignment of long
	// composite literals to a second (gofmt would change it).
	b, err := format.Source([]byte(code))
	if err != nil {
		return nil, err
	}
	return format.Source(b)
}

// TestEmbeddedJSON checks that the tables (rules.bin, config.bin,
// effects.bin: see tables.go) and selfapi_gen.go hold what rules.yaml,
// effects.yaml and selfapi.yaml say, and that the defaults they give are
// valid: the guard loads the generated forms, people edit the YAML files.
func TestEmbeddedJSON(t *testing.T) {
	rules, err := ParseConfig(defaultRulesYAML) // validates too
	if err != nil {
		t.Fatalf("rules.yaml: %v", err)
	}
	effects, err := parseEffects(effectsYAML)
	if err != nil {
		t.Fatal(err)
	}
	effectsCompiled, err := compileEffectsDoc(effects)
	if err != nil {
		t.Fatal(err)
	}
	var self selfLists
	if err := yaml.Unmarshal(selfAPIYAML, &self); err != nil {
		t.Fatalf("selfapi.yaml: %v", err)
	}
	selfGen, err := genTable("selfapi.yaml", "selfListsValue", self)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := compile(rules)
	if err != nil {
		t.Fatal(err)
	}
	generated := map[string][]byte{
		"rules.bin":      encodeTable(compiled),
		"config.bin":     encodeTable(rules),
		"effects.bin":    encodeTable(effectsCompiled),
		"selfapi_gen.go": selfGen,
	}
	if *updateJSON {
		for name, b := range generated {
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	const regen = "run `go generate ./internal/guard/shell`"
	for name, want := range generated {
		if have, err := os.ReadFile(name); err != nil || !bytes.Equal(have, want) {
			t.Errorf("%s is not its YAML file (%v): %s", name, err, regen)
		}
	}
	// The embedded tables decode to the YAML files' content: this checks
	// the decoders against the encoder (and so against the types).
	if got := decodeEffects(effectsBin); !reflect.DeepEqual(got, effectsCompiled) {
		t.Error("effects.bin decodes to other specs than effects.yaml compiled")
	}
	if !reflect.DeepEqual(selfListsValue(), self) {
		t.Error("selfListsValue differs from selfapi.yaml")
	}
	if got := decodeRules(rulesBin); !reflect.DeepEqual(got, compiled) {
		t.Error("rules.bin decodes to other rules than rules.yaml compiled")
	}
	if got := decodeConfig(configBin); !reflect.DeepEqual(got, rules) {
		t.Error("config.bin decodes to another Config than rules.yaml")
	}
	// What the guard loads is what the YAML says.
	if !reflect.DeepEqual(DefaultConfig(), rules) {
		t.Error("DefaultConfig differs from rules.yaml")
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("the generated defaults: %v", err)
	}
	if got, want := len(effectSpecs()), len(effects.Programs); got != want {
		t.Errorf("effects_gen.go gives %d programs, effects.yaml %d", got, want)
	}
	// A fresh copy each time: a caller may change it.
	a := DefaultConfig()
	a.ReadOnly[0] = "changed"
	if DefaultConfig().ReadOnly[0] == "changed" {
		t.Error("DefaultConfig shares its lists between calls")
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
