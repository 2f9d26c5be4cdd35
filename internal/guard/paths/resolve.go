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
	dest := "/"
	rest := p
	links := 0
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
			return "", fmt.Errorf("resolving %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			dest = next
			continue
		}
		links++
		if links > MaxSymlinks {
			return "", fmt.Errorf("resolving %s: more than %d links at %s: %w", p, MaxSymlinks, next, ErrSymlinkLoop)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolving %s: %w", p, err)
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
	return dest, nil
}
