package paths

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Sentinel errors of path resolution. Callers branch on them with errors.Is.
var (
	// ErrSymlinkLoop means resolving a path followed more symbolic links
	// than MaxSymlinks: the links form a loop (or a chain too long to be
	// honest).
	ErrSymlinkLoop = errors.New("symbolic link loop")
	// ErrRelative means a relative path was given without an absolute
	// working directory to resolve it against.
	ErrRelative = errors.New("relative path without a working directory")
	// ErrNoHome means a path starts with ~ but the home directory is unknown.
	ErrNoHome = errors.New("home directory unknown")
	// ErrEmpty means the path is empty.
	ErrEmpty = errors.New("empty path")
)

// MaxSymlinks is how many symbolic links one resolution may follow, as the
// Linux kernel allows (MAXSYMLINKS).
const MaxSymlinks = 40

// Absolute makes p absolute without touching the file system: "~" and
// "~/…" are expanded to home, a relative path is joined to cwd (which must
// be absolute). Unlike filepath.Clean it keeps ".." components, because
// their meaning depends on the symbolic links before them; Resolve
// interprets them.
func Absolute(home, cwd, p string) (string, error) {
	if p == "" {
		return "", ErrEmpty
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home == "" || !filepath.IsAbs(home) {
			return "", fmt.Errorf("%q: %w", p, ErrNoHome)
		}
		return home + "/" + strings.TrimPrefix(p[1:], "/"), nil
	}
	if filepath.IsAbs(p) {
		return p, nil
	}
	if cwd == "" || !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("%q: %w", p, ErrRelative)
	}
	return cwd + "/" + p, nil
}

// Resolve returns the real location of p: "~" expanded, made absolute
// against cwd, and every symbolic link and ".." resolved component by
// component, the way the kernel would when opening it. Components that do
// not exist (yet) are appended as written, so the path a write would create
// is judged where it would land. A loop of symbolic links returns an error
// wrapping ErrSymlinkLoop; a component that cannot be examined (permission
// denied, for example) returns that error, so callers fail closed.
//
// The last component is resolved too: a link is judged by what it points
// to, which is what reading or writing through it reaches.
func Resolve(home, cwd, p string) (string, error) {
	abs, err := Absolute(home, cwd, p)
	if err != nil {
		return "", err
	}
	return resolveAbs(abs)
}

// resolveAbs walks an absolute path component by component.
func resolveAbs(p string) (string, error) {
	dest, _, err := walk(p, "/", p, 0)
	return dest, err
}

// walk resolves the components of rest, the remainder of the absolute path
// p, from dest, a resolved directory reached through links symbolic links.
// It returns where the walk lands and the links it followed in all.
func walk(p, dest, rest string, links int) (string, int, error) {
	for rest != "" {
		var comp string
		comp, rest, _ = strings.Cut(rest, "/")
		switch comp {
		case "", ".":
			continue
		case "..":
			dest = filepath.Dir(dest)
			continue
		}
		next := filepath.Join(dest, comp)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				// Nothing there (yet): the rest can only be judged as written,
				// but later ".." components may climb back to existing links,
				// so the walk goes on.
				dest = next
				continue
			}
			return "", links, fmt.Errorf("resolving %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			dest = next
			continue
		}
		links++
		if links > MaxSymlinks {
			return "", links, fmt.Errorf("resolving %s: more than %d links at %s: %w", p, MaxSymlinks, next, ErrSymlinkLoop)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", links, fmt.Errorf("resolving %s: %w", p, err)
		}
		if filepath.IsAbs(target) {
			dest = "/"
		}
		if rest == "" {
			rest = target
		} else {
			rest = target + "/" + rest
		}
	}
	return dest, links, nil
}

// resolvedDir is a directory (an action's working directory) resolved
// once, so that the paths under it resolve without walking it again.
type resolvedDir struct {
	literal string // as given
	dest    string // resolved
	links   int    // the symbolic links followed to resolve it
	ok      bool   // resolved without error
}

// resolveDir resolves dir, an absolute path; ok is false when it is not
// absolute or does not resolve.
func resolveDir(dir string) resolvedDir {
	if dir == "" || !filepath.IsAbs(dir) {
		return resolvedDir{}
	}
	dest, links, err := walk(dir, "/", dir, 0)
	return resolvedDir{literal: dir, dest: dest, links: links, ok: err == nil}
}

// resolve is resolveAbs(abs). When abs is the directory followed by "/"
// and more, as Absolute makes a path relative to it, the walk picks up
// where the directory's ended: walking abs from "/" reaches exactly that
// state (the same place, the same number of links followed) once it has
// consumed the directory's components, so the result, error or not, is
// the same.
func (d resolvedDir) resolve(abs string) (string, error) {
	if d.ok {
		if rest, found := strings.CutPrefix(abs, d.literal+"/"); found {
			dest, _, err := walk(abs, d.dest, rest, d.links)
			return dest, err
		}
	}
	return resolveAbs(abs)
}
