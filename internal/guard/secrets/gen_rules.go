//go:build ignore

// gen_rules copies gitleaks' default rule set from the gitleaks module that
// go.mod pins into gitleaks/gitleaks.json (the TOML turned into JSON), which
// the analyser embeds: the binary then links neither gitleaks, its
// configuration stack (viper, HCL, afero…) nor a TOML parser. Run
// `go generate ./internal/guard/secrets` after upgrading the module;
// TestEmbeddedRulesAreTheModules fails until then.
package main

import (
	"encoding/json"
	"log"
	"os"

	toml "github.com/pelletier/go-toml/v2"
	gitleaks "github.com/zricethezav/gitleaks/v8/config"
)

func main() {
	var v map[string]any
	if err := toml.Unmarshal([]byte(gitleaks.DefaultConfig), &v); err != nil {
		log.Fatal(err)
	}
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("gitleaks/gitleaks.json", append(b, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
}
