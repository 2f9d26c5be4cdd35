package secrets

import (
	"encoding/json"
	"testing"

	toml "github.com/pelletier/go-toml/v2"
	gitleaks "github.com/zricethezav/gitleaks/v8/config"
)

// TestEmbeddedRulesAreTheModules: the embedded rule set is the one of the
// gitleaks module go.mod pins (its TOML as JSON), so upgrading the module
// cannot silently leave the analyser on old rules.
func TestEmbeddedRulesAreTheModules(t *testing.T) {
	var v map[string]any
	if err := toml.Unmarshal([]byte(gitleaks.DefaultConfig), &v); err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if gitleaksJSON != string(want)+"\n" {
		t.Fatal("gitleaks/gitleaks.json differs from the pinned gitleaks module's default config: run `go generate ./internal/guard/secrets`")
	}
}
