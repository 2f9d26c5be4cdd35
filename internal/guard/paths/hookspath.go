package paths

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/tracked"
)

// Git runs the hooks of the directory core.hooksPath names instead of
// .git/hooks: husky's .husky, a project's tools/hooks. What is written
// there runs at the next commit, checkout or push — the person's too —
// outside Overseer's view, as a file of .git/hooks does. The names most
// projects use are control files by name (controls.txt); any other is
// found in the configuration of the repository that holds the path. (The
// user's own configuration, ~/.gitconfig, names a directory outside the
// working tree, where a write reaches a person anyway.)

// maxGitConfig bounds the configuration file read.
const maxGitConfig = 1 << 20

// maxRepoDepth bounds the directories walked up to find a repository.
const maxRepoDepth = 64

// hooksDirs returns the hooks directory (absolute, clean) that the
// configuration of the repository holding p names (core.hooksPath).
func (g *Guard) hooksDirs(p string) []string {
	var out []string
	add := func(v, base string) {
		if v == "" {
			return
		}
		switch {
		case v == "~" || strings.HasPrefix(v, "~/"):
			if g.home == "" {
				return
			}
			v = filepath.Join(g.home, strings.TrimPrefix(v, "~"))
		case !filepath.IsAbs(v):
			if base == "" {
				return
			}
			v = filepath.Join(base, v)
		}
		out = append(out, filepath.Clean(v))
	}
	if root, cfg, ok := repoConfig(filepath.Dir(p), g.home); ok {
		add(hooksPathIn(cfg), root)
	}
	return out
}

// repoConfig finds the repository that holds dir: its work tree's root and
// its configuration file (through a .git file's gitdir, and a worktree's
// commondir). The walk up ends at home (a repository above the user's home
// is not looked for): one lstat a directory.
func repoConfig(dir, home string) (root, cfg string, ok bool) {
	d := filepath.Clean(dir)
	for n := 0; n < maxRepoDepth && filepath.IsAbs(d); n++ {
		gd := filepath.Join(d, ".git")
		if st, err := os.Lstat(gd); err == nil {
			if st.IsDir() {
				return d, filepath.Join(gd, "config"), true
			}
			if !st.Mode().IsRegular() {
				return "", "", false
			}
			b, err := readSmall(gd)
			if err != nil {
				return "", "", false
			}
			target, found := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
			if !found {
				return "", "", false
			}
			target = strings.TrimSpace(target)
			if !filepath.IsAbs(target) {
				target = filepath.Join(d, target)
			}
			if c, err := readSmall(filepath.Join(target, "commondir")); err == nil {
				common := strings.TrimSpace(string(c))
				if !filepath.IsAbs(common) {
					common = filepath.Join(target, common)
				}
				target = common
			}
			return d, filepath.Join(target, "config"), true
		}
		parent := filepath.Dir(d)
		if parent == d || d == home {
			break
		}
		d = parent
	}
	return "", "", false
}

// readSmall reads a small regular file without blocking on what is not
// one.
func readSmall(p string) ([]byte, error) {
	f, err := guard.OpenRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxGitConfig))
}

// hooksPathIn returns the value of core.hooksPath in the git configuration
// file f (the last one set), or "".
func hooksPathIn(f string) string {
	b, err := readSmall(f)
	if err != nil {
		return ""
	}
	return tracked.ConfigValue(string(b), "core", "hookspath")
}
