package tracked

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"time"
)

// SourceExtensions are the file name extensions (lower case) of source
// files: what a deletion outside any repository would lose for good.
var SourceExtensions = map[string]bool{
	".go": true, ".py": true, ".js": true, ".mjs": true, ".cjs": true, ".ts": true, ".tsx": true, ".jsx": true,
	".rs": true, ".c": true, ".h": true, ".cc": true, ".cpp": true, ".cxx": true, ".hpp": true, ".hh": true,
	".java": true, ".kt": true, ".kts": true, ".scala": true, ".swift": true, ".m": true, ".mm": true,
	".rb": true, ".php": true, ".pl": true, ".pm": true, ".lua": true, ".r": true, ".jl": true,
	".cs": true, ".fs": true, ".vb": true, ".dart": true, ".ex": true, ".exs": true, ".erl": true, ".hs": true,
	".ml": true, ".clj": true, ".elm": true, ".zig": true, ".nim": true, ".sh": true, ".bash": true, ".zsh": true,
	".sql": true, ".proto": true, ".vue": true, ".svelte": true, ".sol": true, ".tf": true,
}

// SkipDirs are directory names a source scan does not descend into:
// dependencies, caches and build outputs that tools recreate.
var SkipDirs = map[string]bool{
	"node_modules": true, ".venv": true, "venv": true, "__pycache__": true, ".tox": true, ".mypy_cache": true,
	".pytest_cache": true, ".gradle": true, ".next": true, ".nuxt": true, ".cache": true, "target": true,
	"dist": true, "build": true, "out": true, ".terraform": true, "bower_components": true, ".git": true,
}

// IsSource reports whether name has a source extension.
func IsSource(name string) bool {
	return SourceExtensions[strings.ToLower(path.Ext(name))]
}

var errBound = errors.New("tracked: the scan reached its bound")

// scanSource lists the source files at or below p, outside any repository.
func scanSource(fsys fs.FS, p string, limit int) Result {
	r := Result{Complete: true}
	// Removing a symbolic link removes the link, not what it points to.
	fi, err := fs.Lstat(fsys, name(p))
	if err != nil {
		// Nothing there (or it cannot be read): nothing to lose that can
		// be seen. The deletion's other checks still apply.
		if !errors.Is(err, fs.ErrNotExist) {
			r.Complete, r.Err = false, err
		}
		return r
	}
	found := func(f string) {
		r.Total++
		if len(r.Files) < limit {
			r.Files = append(r.Files, f)
		}
	}
	if !fi.IsDir() {
		if fi.Mode().IsRegular() && IsSource(p) {
			found(p)
		}
		return r
	}
	if SkipDirs[path.Base(p)] {
		return r
	}
	deadline := time.Now().Add(ScanBudget)
	entries := 0
	err = fs.WalkDir(fsys, name(p), func(n string, d fs.DirEntry, err error) error {
		entries++
		if entries > MaxScanEntries || entries%256 == 0 && time.Now().After(deadline) {
			return errBound
		}
		if err != nil {
			return nil // an unreadable part: what can be read is listed
		}
		if d.IsDir() {
			if n != name(p) && SkipDirs[d.Name()] {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && IsSource(d.Name()) {
			found("/" + n)
		}
		return nil
	})
	if err != nil {
		r.Complete, r.Err = false, err
	}
	return r
}
