package paths

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// TestLaterPaths judges the paths of commands an action plants for a later
// program (Facts.Later): Overseer's home, a control file and a
// catastrophic deletion are blocked, a secret read reaches a person, and
// the working tree's own files say nothing, whatever the action touches
// now.
func TestLaterPaths(t *testing.T) {
	f := newFixture(t)
	g := New(f.config(nil))
	for _, c := range []struct {
		name   string
		later  action.PathFact
		want   string
		wantBy string
	}{
		{"overseer home deleted", action.PathFact{Path: f.ovh, Intent: action.PathDelete}, "hard:block", "paths.self-protection"},
		{"home deleted", action.PathFact{Path: f.home, Intent: action.PathDelete}, "hard:block", "paths.catastrophic-delete"},
		{"start-up file written", action.PathFact{Path: filepath.Join(f.home, ".bashrc"), Intent: action.PathWrite}, "hard:block", "paths.control-file"},
		{"key read", action.PathFact{Path: filepath.Join(f.home, ".ssh", "id_rsa"), Intent: action.PathRead}, "hard:approve", "paths.secret"},
		{"twin: build output deleted", action.PathFact{Path: filepath.Join(f.proj, "sub"), Intent: action.PathDelete}, "none", "-"},
		{"twin: readme read", action.PathFact{Path: filepath.Join(f.proj, "README.md"), Intent: action.PathRead}, "none", "-"},
		{"twin: outside the tree", action.PathFact{Path: filepath.Join(f.other, "notes.txt"), Intent: action.PathWrite}, "none", "-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := fileAction(action.KindFileWrite, "claude-code", "Write", f.proj, filepath.Join(f.proj, "package.json"))
			action.DeriveFileFacts(a)
			a.Facts.Later = []action.PathFact{c.later}
			fs, err := g.Check(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			if got, by := strictest(fs); got != c.want || by != c.wantBy {
				t.Errorf("%s by %s, want %s by %s (%v)", got, by, c.want, c.wantBy, fs)
			}
		})
	}
}
