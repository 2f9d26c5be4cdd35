//go:build ignore

// gen_rules copies gitleaks' default rule set from the gitleaks module that
// go.mod pins into gitleaks/gitleaks.toml, which the analyser embeds: the
// binary then links neither gitleaks nor its configuration stack (viper,
// HCL, afero…). Run `go generate ./internal/guard/secrets` after upgrading
// the module; TestEmbeddedRulesAreTheModules fails until then.
package main

import (
	"log"
	"os"

	gitleaks "github.com/zricethezav/gitleaks/v8/config"
)

func main() {
	if err := os.WriteFile("gitleaks/gitleaks.toml", []byte(gitleaks.DefaultConfig), 0o644); err != nil {
		log.Fatal(err)
	}
}
