package shell

import (
	"io/fs"
	"path"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
)

// danger is how catastrophic removing a path would be.
type danger uint8

const (
	dangerNone   danger = iota
	dangerRoot          // the root directory
	dangerSystem        // a direct child of the root (/etc, /usr, /home, …)
	dangerHome          // a home directory, or a directory that contains one
	dangerDrive         // a Windows drive's root or one of its direct children
)

// check returns the finding check name of a danger.
func (d danger) check() string {
	switch d {
	case dangerRoot:
		return "root"
	case dangerSystem:
		return "system-dir"
	case dangerHome:
		return "home"
	case dangerDrive:
		return "drive-root"
	}
	return "none"
}

// describe says what p is, for a person.
func (d danger) describe(p string) string {
	switch d {
	case dangerRoot:
		return "the root directory /"
	case dangerSystem:
		return "the system directory " + p
	case dangerHome:
		return "the home directory " + p
	case dangerDrive:
		return "the drive " + p
	}
	return p
}

// windowsPath recognises "C:", "C:\…" and "C:/…" and returns the path on
// the drive in slash form ("/Windows").
func windowsPath(p string) (string, bool) {
	if len(p) < 2 || p[1] != ':' || !isLetter(p[0]) {
		return "", false
	}
	if len(p) > 2 && p[2] != '\\' && p[2] != '/' {
		return "", false
	}
	rest := strings.ReplaceAll(p[2:], `\`, "/")
	return path.Clean("/" + rest), true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// depth is the number of components of a clean absolute path.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// danger classifies a resolved path (absolute and clean, "~…" when the home
// is unknown, relative when the working directory is unknown, or a Windows
// path).
func (a *analyzer) danger(p string) danger {
	p = a.alias(p) // links.go: /proc/self/root, symbolic links
	if rest, ok := windowsPath(p); ok {
		if depth(rest) <= 1 {
			return dangerDrive
		}
		return dangerNone
	}
	if strings.HasPrefix(p, "~") {
		if path.Clean("/"+p[1:]) == "/" {
			return dangerHome
		}
		return dangerNone
	}
	if !path.IsAbs(p) {
		return dangerNone
	}
	p = path.Clean(p)
	if p == "/" {
		return dangerRoot
	}
	if a.env.Home != "" && action.Within(p, a.env.Home) {
		return dangerHome
	}
	d := depth(p)
	if d == 1 {
		return dangerSystem
	}
	first, rest, _ := strings.Cut(p[1:], "/")
	second, _, _ := strings.Cut(rest, "/")
	switch {
	case (first == "mnt" || first == "cygdrive") && len(second) == 1 && isLetter(second[0]) && d <= 3:
		return dangerDrive
	case (first == "home" || first == "Users") && d == 2:
		return dangerHome
	}
	return dangerNone
}

// abs resolves p against the working directory at this point of the
// command. ok is false when p is relative and the working directory is
// unknown (p is then returned cleaned).
func (a *analyzer) abs(p string) (string, bool) {
	if a.container != nil {
		return a.containerPath(p) // foreign.go: inside a container
	}
	if _, win := windowsPath(p); win {
		return p, true
	}
	if path.IsAbs(p) {
		if q, ok := a.procPath(p); ok {
			p = q
		} else if !ok && q == "" {
			return path.Clean(p), false
		}
	}
	if strings.HasPrefix(p, "~") || path.IsAbs(p) {
		return a.physicalDots(p), true
	}
	if !a.cwdKnown {
		return path.Clean(p), false
	}
	return a.physicalDots(a.cwd + "/" + p), true
}

// procPath maps a path through /proc/PID/root or /proc/self/cwd to the path
// the reading process reaches: /proc/self/root/home/u/x is /home/u/x, and
// /proc/self/cwd/x is x in the working directory (the judging process's
// own /proc/self is another process, the daemon's in another directory).
// ok is false when p is not such a path; q is "" when it is one whose
// target is not known (another process's working directory).
func (a *analyzer) procPath(p string) (q string, ok bool) {
	rest, isProc := strings.CutPrefix(p, "/proc/")
	if !isProc {
		return p, false
	}
	pid, rest, _ := strings.Cut(rest, "/")
	link, rest, _ := strings.Cut(rest, "/")
	self := pid == "self" || pid == "thread-self" || pid == "$$" || pid == "$BASHPID"
	if !self && !isDigits(pid) {
		return p, false
	}
	switch link {
	case "root":
		return "/" + rest, true
	case "cwd":
		if self && a.cwdKnown {
			return a.cwd + "/" + rest, true
		}
		return "", false
	}
	return p, false
}

// physicalDots cleans p, reading ".." as the kernel does: after a symbolic
// link it leads to the parent of the link's target, not of the link
// (link/../.overseer/token with link -> ~/.ssh is ~/.overseer/token, not
// ./.overseer/token). Paths without ".." are only cleaned.
func (a *analyzer) physicalDots(p string) string {
	if !strings.Contains(p, "..") {
		return path.Clean(p)
	}
	last := strings.LastIndex(p, "/..")
	if last < 0 || last+3 < len(p) && p[last+3] != '/' {
		return path.Clean(p)
	}
	head, tail := p[:last+3], p[last+3:]
	prefix := ""
	if strings.HasPrefix(head, "~") {
		if a.env.Home == "" {
			return path.Clean(p)
		}
		prefix, head = "~", a.env.Home+strings.TrimPrefix(head, "~")
	}
	rfs, ok := a.fileSystem().(fs.ReadLinkFS)
	if !ok {
		return path.Clean(p)
	}
	real, ok := resolveDots(rfs, head, 0)
	if !ok {
		return path.Clean(p)
	}
	out := path.Clean(real + tail)
	if prefix == "~" && action.Within(a.env.Home, out) {
		out = "~" + strings.TrimPrefix(out, a.env.Home)
	}
	return out
}

// resolveDots walks the absolute path p component by component, following
// symbolic links, so that ".." applies to where a link leads. ok is false
// when a link cannot be read or links loop (the caller keeps the cleaned
// path).
func resolveDots(rfs fs.ReadLinkFS, p string, depth int) (string, bool) {
	cur := "/"
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		st, err := rfs.Lstat(fsName(next))
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			cur = next // a component that does not exist is taken as written
			continue
		}
		if depth >= 40 {
			return "", false
		}
		target, err := rfs.ReadLink(fsName(next))
		if err != nil {
			return "", false
		}
		if !path.IsAbs(target) {
			target = cur + "/" + target
		}
		r, ok := resolveDots(rfs, target, depth+1)
		if !ok {
			return "", false
		}
		depth++
		cur = r
	}
	return cur, true
}

// where is the location of a path relative to the working tree.
type where uint8

const (
	whereUnknown where = iota // relative to an unknown working directory
	whereTree                 // inside the working directory
	whereScratch              // inside a scratch directory (/tmp)
	whereHome                 // inside a home directory, outside the tree
	whereSystem               // anywhere else
)

func (a *analyzer) where(p string, known bool) where {
	if !known {
		return whereUnknown
	}
	if _, win := windowsPath(p); win {
		return whereSystem
	}
	if strings.HasPrefix(p, "~") {
		return whereHome
	}
	if a.cwdKnown && action.Within(a.cwd, p) {
		return whereTree
	}
	// A home inside a scratch directory (HOME=/tmp/u) is still the home:
	// its start-up files and credentials are not scratch.
	if a.env.Home != "" && action.Within(a.env.Home, p) && a.scratch(a.env.Home) {
		return whereHome
	}
	if a.scratch(p) {
		return whereScratch
	}
	if a.env.Home != "" && action.Within(a.env.Home, p) {
		return whereHome
	}
	if strings.HasPrefix(p, "/home/") || strings.HasPrefix(p, "/Users/") || strings.HasPrefix(p, "/root/") {
		return whereHome
	}
	return whereSystem
}

// scratch reports whether p is a scratch directory or inside one.
func (a *analyzer) scratch(p string) bool {
	for _, s := range a.r.scratch {
		if action.Within(s, p) {
			return true
		}
	}
	return false
}

// secret reports whether p (resolved as by abs) is a secret file.
func (r *rules) secret(p string) bool {
	if p == "" {
		return false
	}
	q := p
	switch {
	case strings.HasPrefix(q, "~"):
		q = q[1:]
	case !strings.HasPrefix(q, "/"):
		q = "/" + q
	}
	base := path.Base(q)
	for _, e := range r.secretExc {
		if ok, _ := path.Match(e, base); ok {
			return false
		}
	}
	for _, s := range r.secrets {
		switch s.kind {
		case 'd':
			if strings.Contains(q+"/", s.text+"/") {
				return true
			}
		case 's':
			if strings.HasSuffix(q, s.text) {
				return true
			}
		case 'a':
			if q == s.text {
				return true
			}
		case 'A':
			if action.Within(s.text, q) {
				return true
			}
		case 'b':
			if ok, _ := path.Match(s.text, base); ok {
				return true
			}
		}
	}
	return false
}

// isSecretArg reports whether an argument names a secret file, directly or
// in the forms data-sending tools use ("@file", "name=@file", "--x=file").
func (a *analyzer) isSecretArg(v string) bool {
	if v == "" || strings.Contains(v, "://") {
		return false
	}
	check := func(c string) bool {
		if c == "" || c[0] == '-' {
			return false
		}
		p, _ := a.abs(c)
		return a.r.secret(p)
	}
	if check(v) {
		return true
	}
	if i := strings.LastIndexByte(v, '@'); i >= 0 {
		c, _, _ := strings.Cut(v[i+1:], ";")
		if check(c) {
			return true
		}
	}
	if i := strings.IndexByte(v, '='); i >= 0 {
		c := strings.TrimLeft(v[i+1:], "@<")
		c, _, _ = strings.Cut(c, ";")
		if check(c) {
			return true
		}
	}
	if strings.HasPrefix(v, "<") {
		return check(v[1:])
	}
	return false
}

func matchAny(patterns []string, p string) bool {
	for _, g := range patterns {
		if ok, _ := path.Match(g, p); ok {
			return true
		}
	}
	return false
}

// blockDevice reports whether p is a raw disk device.
func (r *rules) blockDevice(p string) bool {
	return strings.HasPrefix(p, "/dev/") && matchAny(r.blockDev, path.Clean(p))
}

// harmlessDevice reports whether writing to p is harmless (/dev/null).
func (r *rules) harmlessDevice(p string) bool {
	return (strings.HasPrefix(p, "/dev/") || strings.HasPrefix(p, "/proc/")) && matchAny(r.harmlessDev, path.Clean(p))
}

// globAll reports whether a path component matches every name (*, .*, **).
func globAll(comp string) bool {
	if comp == "" || !strings.ContainsAny(comp, "*?") {
		return false
	}
	return strings.Trim(comp, "*?.") == ""
}

// splitGlob splits a resolved glob pattern into the static directory before
// its first pattern component and the components from there on.
func splitGlob(p string) (dir string, rest []string) {
	comps := strings.Split(p, "/")
	for i, c := range comps {
		if strings.ContainsAny(c, "*?[") {
			dir = strings.Join(comps[:i], "/")
			if dir == "" && strings.HasPrefix(p, "/") {
				dir = "/"
			}
			return dir, comps[i:]
		}
	}
	return p, nil
}
