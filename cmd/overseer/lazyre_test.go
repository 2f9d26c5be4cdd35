package main

import (
	"testing"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// TestLazyPatternsCompile compiles every pattern of the binary's packages
// that is compiled on first use (internal/lazyre) rather than at start-up.
func TestLazyPatternsCompile(t *testing.T) {
	if lazyre.Count() == 0 {
		t.Fatal("no lazily compiled pattern is linked")
	}
	if err := lazyre.CompileAll(); err != nil {
		t.Fatal(err)
	}
}
