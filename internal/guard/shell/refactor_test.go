package shell

import (
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// TestHomeInScratch: a home inside a scratch directory (HOME=/tmp/u, as in
// some sandboxes) is still the home: a move of the project's files into it
// is a write outside the working tree, not a write to scratch space.
func TestHomeInScratch(t *testing.T) {
	env := Env{Cwd: "/tmp/u/proj", Home: "/tmp/u", FS: emptyFS(t)}
	for _, cmd := range []string{"mv docs ~/Desktop/docs-backup", "cp -r docs /tmp/u/.config/x", "mv docs ../docs"} {
		if an := Analyze(cmd, env); an.Level < action.Confirm {
			t.Errorf("%s: %s\n%s", cmd, an.Level, describe(an))
		}
	}
	if an := Analyze("mv build/out.bin /tmp/out.bin", env); an.Level >= action.Confirm {
		t.Errorf("a move to scratch outside the home: %s\n%s", an.Level, describe(an))
	}
}
