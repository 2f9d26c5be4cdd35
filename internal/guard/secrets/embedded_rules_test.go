package secrets

import (
	"testing"

	gitleaks "github.com/zricethezav/gitleaks/v8/config"
)

// TestEmbeddedRulesAreTheModules: the embedded rule set is the one of the
// gitleaks module go.mod pins, so upgrading the module cannot silently leave
// the analyser on old rules.
func TestEmbeddedRulesAreTheModules(t *testing.T) {
	if gitleaksTOML != gitleaks.DefaultConfig {
		t.Fatal("gitleaks/gitleaks.toml differs from the pinned gitleaks module's default config: run `go generate ./internal/guard/secrets`")
	}
}
