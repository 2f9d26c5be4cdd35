package action

import (
	"path/filepath"
	"strings"
)

// pathArgKeys are the argument names under which agents pass a file path.
var pathArgKeys = []string{"path", "file_path", "filepath", "filename", "file", "notebook_path", "target"}

// ResolvePath makes p absolute against cwd and cleans it. It does not touch
// the file system (symlinks are resolved by the path guard).
func ResolvePath(cwd, p string) string {
	if p == "" {
		return ""
	}
	if strings.HasPrefix(p, "~/") || p == "~" {
		// Left as written: the path guard expands the home directory.
		return filepath.Clean(p)
	}
	if !filepath.IsAbs(p) && cwd != "" {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// Within reports whether path is dir or inside it. Both must be clean and
// absolute.
func Within(dir, path string) bool {
	if dir == "" || path == "" {
		return false
	}
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// DeriveFileFacts fills a.Facts.Paths for file kinds from the well-known path
// arguments, resolved against a.Cwd, if no analyzer has filled them yet.
// It is the basic derivation every component can rely on; the path guard
// refines it (symlinks, home directory).
func DeriveFileFacts(a *Action) {
	if len(a.Facts.Paths) > 0 {
		return
	}
	var intent PathIntent
	switch a.Kind {
	case KindFileRead:
		intent = PathRead
	case KindFileWrite, KindFileEdit:
		intent = PathWrite
	case KindFileDelete:
		intent = PathDelete
	default:
		return
	}
	cwd := filepath.Clean(a.Cwd)
	for _, k := range pathArgKeys {
		p, ok := a.Args[k].(string)
		if !ok || p == "" {
			continue
		}
		abs := ResolvePath(a.Cwd, p)
		a.Facts.Paths = append(a.Facts.Paths, PathFact{
			Path:   abs,
			Intent: intent,
			InCwd:  a.Cwd != "" && filepath.IsAbs(cwd) && Within(cwd, abs),
		})
	}
}
