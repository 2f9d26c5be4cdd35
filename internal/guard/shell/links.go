package shell

import (
	"io/fs"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// This file resolves the other names of a path — /proc/self/root, symbolic
// links on the file system and links the command itself creates — and
// judges functions defined in the command with the arguments they are
// called with.

// maxLinkHops bounds the symbolic links followed for one path.
const maxLinkHops = 16

var procRoot = lazyre.New(`^/proc/(self|thread-self|[0-9]+)/root(/|$)`)

// alias returns the path p names once /proc/PID/root (an alias of the
// root for processes that are not confined) and the symbolic links of its
// parent directories are resolved. The last component is not followed:
// removing a link removes the link.
func (a *analyzer) alias(p string) string {
	if !path.IsAbs(p) {
		return p
	}
	p = path.Clean(p)
	for n := 0; n < 4 && procRoot.MatchString(p); n++ {
		loc := procRoot.FindStringIndex(p)
		p = path.Clean("/" + p[loc[1]:])
	}
	if strings.HasPrefix(p, "/proc/self/cwd") && a.cwdKnown {
		rest := strings.TrimPrefix(p, "/proc/self/cwd")
		if rest == "" || rest[0] == '/' {
			p = path.Join(a.cwd, rest)
		}
	}
	if p == "/" {
		return p
	}
	dir := a.follow(path.Dir(p))
	return path.Join(dir, path.Base(p))
}

// follow resolves every symbolic link in the absolute path p.
func (a *analyzer) follow(p string) string {
	if !path.IsAbs(p) || p == "/" || a.noLinks() {
		return p
	}
	p = path.Clean(p)
	hops := 0
	resolved := "/"
	rest := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, c)
		target, ok := a.readLink(next)
		if !ok {
			resolved = next
			continue
		}
		hops++
		if hops > maxLinkHops {
			return p
		}
		if path.IsAbs(target) {
			resolved = "/"
		}
		rest = append(strings.Split(strings.Trim(target, "/"), "/"), rest...)
		if procRoot.MatchString(path.Clean("/" + strings.Join(rest, "/"))) {
			rest = strings.Split(strings.TrimPrefix(a.alias("/"+strings.Join(rest, "/")), "/"), "/")
		}
	}
	return resolved
}

// noLinks reports whether no link can be read: no links made by the
// command and a file system without ReadLink.
func (a *analyzer) noLinks() bool {
	if len(a.links) > 0 {
		return false
	}
	_, ok := a.fileSystem().(fs.ReadLinkFS)
	return !ok
}

// readLink returns the target of the symbolic link p: one the command made
// earlier, or one on the file system.
func (a *analyzer) readLink(p string) (string, bool) {
	if t, ok := a.links[p]; ok {
		return t, t != ""
	}
	lfs, ok := a.fileSystem().(fs.ReadLinkFS)
	if !ok || p == "/" {
		return "", false
	}
	t, err := lfs.ReadLink(fsName(p))
	if err != nil || t == "" {
		return "", false
	}
	return t, true
}

// recordLink remembers a symbolic link "ln -s src dest" makes, so that
// removing through it later in the command is judged by what it names.
func (a *analyzer) recordLink(dest, src arg) {
	if dest.dyn || src.dyn || dest.glob {
		return
	}
	d, known := a.abs(dest.val)
	if !known || !path.IsAbs(d) {
		return
	}
	if st, err := fs.Stat(a.fileSystem(), fsName(d)); err == nil && st.IsDir() {
		d = path.Join(d, path.Base(src.val)) // a link inside the directory
	}
	t := src.val
	if strings.HasPrefix(t, "~") {
		t, _ = a.abs(t)
		if strings.HasPrefix(t, "~") {
			return
		}
	}
	if a.links == nil {
		a.links = map[string]string{}
	}
	a.links[d] = t
}

// defineFunction remembers the body of a function defined in the command.
func (a *analyzer) defineFunction(name string, body *syntax.Stmt) {
	if body == nil {
		return
	}
	if a.funcBody == nil {
		a.funcBody = map[string]*syntax.Stmt{}
	}
	a.funcBody[strings.ToLower(name)] = body
}

// maxFuncCalls bounds the function calls judged with their arguments.
const maxFuncCalls = 32

// callFunction judges the body of a function defined earlier in the
// command, called here, with the positional parameters set to the call's
// arguments. A recursive call is not followed (the body was judged when
// the function was defined).
func (a *analyzer) callFunction(s *segCtx) {
	body := a.funcBody[s.name]
	if body == nil || a.inFunc[s.name] || a.funcCalls >= maxFuncCalls {
		return
	}
	a.funcCalls++
	if a.inFunc == nil {
		a.inFunc = map[string]bool{}
	}
	a.inFunc[s.name] = true
	pos, known, cur, wc := a.pos, a.posKnown, a.cur, a.wrapCtx
	a.pos, a.posKnown = append([]arg(nil), s.args...), true
	if s.c.extraDyn {
		a.pos = append(a.pos, arg{val: "<input>", dyn: true})
	}
	if s.idx >= 0 && s.idx < len(a.out.Segments) {
		a.wrapCtx = a.out.Segments[s.idx].Wrappers
	}
	a.stmt(body, OriginFunction)
	a.pos, a.posKnown, a.cur, a.wrapCtx = pos, known, cur, wc
	delete(a.inFunc, s.name)
}
