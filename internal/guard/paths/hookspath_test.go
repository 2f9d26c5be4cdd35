package paths

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// TestConfiguredHooksDirectory: a write into the directory a repository's
// core.hooksPath names is a control file's write, in a plain checkout and
// in a worktree (whose .git is a file); other writes are not.
func TestConfiguredHooksDirectory(t *testing.T) {
	fx := newFixture(t)
	g := New(fx.config(nil))
	repo := filepath.Join(fx.proj, "repo")
	wt := filepath.Join(fx.proj, "wt")
	for name, body := range map[string]string{
		"repo/.git/config":                  "[core]\n\thooksPath = scripts/git-hooks\n",
		"repo/.git/worktrees/wt/commondir":  "../..\n",
		"repo/scripts/git-hooks/pre-commit": "#!/bin/sh\n",
		"wt/.git":                           "gitdir: " + filepath.Join(repo, ".git", "worktrees", "wt") + "\n",
		"wt/scripts/git-hooks/pre-commit":   "#!/bin/sh\n",
	} {
		p := filepath.Join(fx.proj, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		cwd, file string
		block     bool
	}{
		{repo, "scripts/git-hooks/pre-commit", true},
		{repo, "scripts/git-hooks/pre-push", true},
		{wt, "scripts/git-hooks/pre-commit", true},
		{repo, "scripts/build.sh", false},
		{fx.proj, "scripts/git-hooks/pre-commit", false}, // not a repository with that setting
	} {
		a := fileAction(action.KindFileWrite, "claude-code", "Write", c.cwd, c.file)
		action.DeriveFileFacts(a)
		fs, err := g.Check(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		got := false
		for _, f := range fs {
			got = got || f.Check == "paths.control-file" && f.Level == action.Block
		}
		if got != c.block {
			t.Errorf("%s in %s: control-file block %v, want %v (%+v)", c.file, c.cwd, got, c.block, fs)
		}
	}
}
