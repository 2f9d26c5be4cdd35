package paths

import (
	_ "embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/overseer-dev/overseer/internal/action"
)

//go:embed controls.txt
var builtinControls string

// controlRule is one compiled control-file pattern.
type controlRule struct {
	source  string // as written
	abs     string // lower-case absolute path, or ""
	rel     string // lower-case relative path with a slash (".claude/settings.json"), or ""
	name    string // lower-case file name, or ""
	deletes bool   // deleting the file or a directory holding it is blocked too
}

// controlMatcher decides which paths are control files. It is immutable.
type controlMatcher struct {
	rules []controlRule
}

// BuiltinControls returns the built-in control-file patterns (see
// controls.txt for their form).
func BuiltinControls() []string {
	var out []string
	for _, line := range strings.Split(builtinControls, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// compileControls compiles patterns, expanding "~/" to home. Patterns
// under "~/" are skipped when home is unknown.
func compileControls(home string, patterns []string) (*controlMatcher, error) {
	m := &controlMatcher{}
	for _, p := range patterns {
		body, deletes := strings.CutSuffix(strings.TrimSpace(p), " delete")
		body = strings.TrimSpace(body)
		r := controlRule{source: p, deletes: deletes}
		switch {
		case body == "" || body == "/" || body == "~" || body == "~/":
			return nil, fmt.Errorf("%w: control pattern %q would match every path", ErrBadPattern, p)
		case strings.HasPrefix(body, "~/"):
			if home == "" {
				continue
			}
			r.abs = strings.ToLower(path.Clean(strings.TrimSuffix(home, "/") + body[1:]))
		case strings.HasPrefix(body, "/"):
			r.abs = strings.ToLower(path.Clean(body))
		case strings.Contains(body, "/"):
			r.rel = strings.ToLower(path.Clean(body))
		default:
			r.name = strings.ToLower(body)
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// pythonStartup is the rule of Python's start-up files: a .pth file, or
// sitecustomize.py or usercustomize.py, in a site-packages or
// dist-packages directory runs its code at every later start of Python
// (the site module executes a .pth file's import lines), outside the view
// of the command that starts it.
var pythonStartup = controlRule{source: "site-packages/*.pth, sitecustomize.py, usercustomize.py"}

// isPythonStartup reports whether the lower-case clean path lp is one of
// Python's start-up files (see pythonStartup).
func isPythonStartup(lp string) bool {
	dir, base := path.Split(lp)
	if !strings.Contains(dir, "/site-packages/") && !strings.Contains(dir, "/dist-packages/") {
		return false
	}
	return strings.HasSuffix(base, ".pth") || base == "sitecustomize.py" || base == "usercustomize.py"
}

// match reports whether the clean absolute path p is a control file (or
// inside a control directory), and the pattern that decided it.
func (m *controlMatcher) match(p string) (controlRule, bool) {
	lp := strings.ToLower(p)
	if isPythonStartup(lp) {
		return pythonStartup, true
	}
	for _, r := range m.rules {
		switch {
		case r.abs != "":
			if lp == r.abs || strings.HasPrefix(lp, r.abs+"/") {
				return r, true
			}
		case r.rel != "":
			if strings.HasSuffix(lp, "/"+r.rel) || strings.Contains(lp, "/"+r.rel+"/") {
				return r, true
			}
		default:
			if path.Base(lp) == r.name || strings.Contains(lp, "/"+r.name+"/") {
				return r, true
			}
		}
	}
	return controlRule{}, false
}

// holds reports whether deleting the directory p would remove a control
// file whose deletion is blocked: a file of an absolute pattern below p,
// or, for relative patterns, p being a leading part of one (".claude") or
// a directory that holds one on disk.
func (m *controlMatcher) holds(p string) (controlRule, bool) {
	lp := strings.ToLower(p)
	for _, r := range m.rules {
		if !r.deletes {
			continue
		}
		switch {
		case r.abs != "":
			if action.Within(lp, r.abs) {
				return r, true
			}
		case r.rel != "":
			// rm -rf .claude: the deleted path ends with a leading part of
			// the pattern.
			parts := strings.Split(r.rel, "/")
			for i := 1; i < len(parts); i++ {
				if strings.HasSuffix(lp, "/"+strings.Join(parts[:i], "/")) {
					return r, true
				}
			}
			// rm -rf project: the project holds one.
			if _, err := os.Lstat(filepath.Join(p, filepath.FromSlash(r.rel))); err == nil {
				return r, true
			}
		}
	}
	return controlRule{}, false
}

// controlFinding judges one resolved path fact against the control files:
// a write, or an effect whose kind is not known, of a control file, and a
// deletion of one or of a directory holding one, is blocked. Reads pass.
func (g *Guard) controlFinding(p action.PathFact, literal string) (string, bool) {
	if p.Intent == action.PathRead || g.controls == nil {
		return "", false
	}
	for i, cand := range []string{p.Path, literal} {
		if cand == "" {
			continue
		}
		if r, ok := g.controls.match(cand); ok {
			if p.Intent == action.PathDelete && !r.deletes {
				continue
			}
			return fmt.Sprintf("%s is a control file (%s): what is written there runs later, outside Overseer's view, or decides whether Overseer sees the agent at all; agents may not %s it",
				cand, strings.TrimSuffix(r.source, " delete"), verb(p.Intent)), true
		}
		if p.Intent == action.PathDelete {
			if r, ok := g.controls.holds(cand); ok {
				return fmt.Sprintf("deleting %s removes a hook configuration (%s), which switches Overseer off for that agent",
					cand, strings.TrimSuffix(r.source, " delete")), true
			}
		}
		if (p.Intent == action.PathWrite || p.Intent == action.PathUnknown) && (i == 0 || cand != p.Path) {
			// A hooks directory the repository's configuration names
			// (core.hooksPath: hookspath.go).
			for _, d := range g.hooksDirs(cand) {
				if action.Within(d, cand) {
					return fmt.Sprintf("%s is in %s, the git hooks directory core.hooksPath names: what is written there runs at the next commit, checkout or push, outside Overseer's view; agents may not %s it",
						cand, d, verb(p.Intent)), true
				}
			}
		}
		if p.Intent == action.PathUnknown {
			// Files not known before it runs land in cand (an archive
			// unpacked there, a tree copied there): it must not hold
			// control files.
			if r, ok := g.controls.contains(cand); ok {
				return fmt.Sprintf("%s holds control files (%s); files not known before the action runs would land there",
					cand, strings.TrimSuffix(r.source, " delete")), true
			}
		}
	}
	return "", false
}

// verb names what an intent does, for messages.
func verb(i action.PathIntent) string {
	switch i {
	case action.PathUnknown:
		return "pass it to a program that may write it"
	case "":
		return "touch"
	}
	return string(i)
}

// access names an intent as a noun, for messages.
func access(i action.PathIntent) string {
	if i == action.PathUnknown {
		return "use (the program may read or write it)"
	}
	return string(i)
}

// contains reports whether the directory p holds a control file by its
// place: an absolute control path below it, or p being a leading part of a
// relative one (".git", ".claude", ".git/modules/x").
func (m *controlMatcher) contains(p string) (controlRule, bool) {
	lp := strings.ToLower(p)
	for _, r := range m.rules {
		switch {
		case r.abs != "":
			if strings.HasPrefix(r.abs, lp+"/") || lp == "/" {
				return r, true
			}
		case r.rel != "":
			parts := strings.Split(r.rel, "/")
			for i := 1; i < len(parts); i++ {
				if strings.HasSuffix(lp, "/"+strings.Join(parts[:i], "/")) {
					return r, true
				}
			}
		}
	}
	return controlRule{}, false
}

// builtinByHome caches the built-in control matcher of a home directory.
var builtinByHome sync.Map // home → *controlMatcher

// IsControlFile reports whether the clean absolute path p is a built-in
// control file (controls.txt, Python's start-up files) for the home
// directory home, or inside a control directory. Other guards use it to
// pick, among many paths a command writes (an archive's members), those
// the paths guard must see.
func IsControlFile(home, p string) bool {
	m, ok := builtinByHome.Load(home)
	if !ok {
		cm, err := compileControls(home, BuiltinControls())
		if err != nil {
			return true // the built-in list compiles; should it not, every path is one
		}
		m, _ = builtinByHome.LoadOrStore(home, cm)
	}
	_, hit := m.(*controlMatcher).match(path.Clean(p))
	return hit
}
