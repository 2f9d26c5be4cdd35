package paths

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
)

// searchDir is one directory of the PATH the agents' commands run with,
// in its written and resolved forms.
type searchDir struct {
	forms []string
}

// compileSearchPath reads a PATH value into its absolute directories, in
// order (relative entries, "." among them, are left out: they name the
// working directory, whose files the other checks judge).
func compileSearchPath(v string) []searchDir {
	var out []searchDir
	seen := map[string]bool{}
	for _, d := range filepath.SplitList(v) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		if seen[d] {
			continue
		}
		seen[d] = true
		sd := searchDir{forms: []string{d}}
		if r, err := filepath.EvalSymlinks(d); err == nil && r != d {
			sd.forms = append(sd.forms, r)
		}
		out = append(out, sd)
	}
	return out
}

// shadowFinding reports a write that puts a program where the shell finds
// it before the one of the same name it runs today: a file written to
// ~/.local/bin/git (on PATH before /usr/bin) runs at the agent's next `git
// status`, judged as git, and deletes Overseer's home or reads a key
// outside Overseer's view. Overseer's own names are refused in any PATH
// directory. New names are left alone (a tool the person installs there),
// and so are files not known before the action runs (go install ./...
// into ~/go/bin): see the threat model.
func (g *Guard) shadowFinding(p action.PathFact, literal string) (string, bool) {
	if p.Intent != action.PathWrite || len(g.search) == 0 {
		return "", false
	}
	for _, cand := range []string{p.Path, literal} {
		if cand == "" {
			continue
		}
		dir, name := filepath.Dir(cand), filepath.Base(cand)
		at := -1
		for i, sd := range g.search {
			for _, f := range sd.forms {
				if f == dir {
					at = i
				}
			}
			if at >= 0 {
				break
			}
		}
		if at < 0 {
			continue
		}
		if strings.EqualFold(name, "overseer") || strings.EqualFold(name, "overseer-hook") {
			return fmt.Sprintf("%s puts a program called %s on PATH, in place of Overseer's", cand, name), true
		}
		for _, sd := range g.search[at+1:] {
			st, err := os.Stat(filepath.Join(sd.forms[0], name))
			if err == nil && !st.IsDir() && st.Mode().Perm()&0o111 != 0 {
				return fmt.Sprintf("%s is found on PATH before %s: what is written there runs in place of %s at the next command that names it, judged as %s",
					cand, filepath.Join(sd.forms[0], name), name, name), true
			}
		}
	}
	return "", false
}
