package paths

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// TestPathShadow: a program written into a PATH directory ahead of one of
// the same name (~/.local/bin/git before /usr/bin/git) runs at the
// agent's next command that names it; a person must see the write. A new
// name, or a directory not on PATH, is left alone.
func TestPathShadow(t *testing.T) {
	f := newFixture(t)
	first := filepath.Join(f.home, ".local", "bin")
	system := filepath.Join(f.root, "usr-bin")
	for _, d := range []string{first, system} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(system, "git"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(system, "notes"), []byte("not a program\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", first+string(os.PathListSeparator)+"relative/bin"+string(os.PathListSeparator)+system)
	g := New(f.config(nil))
	for _, tc := range []struct {
		path, want string
	}{
		{filepath.Join(first, "git"), "hard:approve"},
		{filepath.Join(first, "overseer"), "hard:approve"},
		{filepath.Join(first, "overseer-hook"), "hard:approve"},
		{filepath.Join(first, "my-new-tool"), "none"},
		{filepath.Join(first, "notes"), "none"}, // not executable where it is found later
		{filepath.Join(f.proj, "git"), "none"},
	} {
		a := fileAction(action.KindFileWrite, "claude-code", "Write", f.proj, tc.path)
		fs, err := g.Check(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, x := range fs {
			if x.Check == "paths.path-shadow" {
				got = "hard:" + x.Level.String()
			}
		}
		if got == "" {
			got = "none"
		}
		if got != tc.want {
			t.Errorf("write %s: path-shadow %s, want %s (%v)", tc.path, got, tc.want, fs)
		}
	}
}
