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

// contentArgKeys are the argument names under which agents pass what a file
// is to contain.
var contentArgKeys = []string{"content", "contents", "new_string", "new_str", "edits", "text", "data", "patch", "diff"}

// carriesContent reports whether args carry content to put into a file.
func carriesContent(args map[string]any) bool {
	for _, k := range contentArgKeys {
		if _, ok := args[k]; ok {
			return true
		}
	}
	return false
}

// readsByName reports whether a tool's name says it only reads
// ("read_file", "mcp__fs__list_directory", "get_file_info").
func readsByName(tool string) bool {
	t := strings.ToLower(tool)
	if i := strings.LastIndex(t, "__"); i >= 0 {
		t = t[i+2:]
	}
	for _, w := range []string{"read", "get", "list", "search", "find", "view", "stat", "show", "open", "glob", "grep", "ls", "cat", "info", "tree"} {
		if t == w || strings.HasPrefix(t, w+"_") || strings.HasPrefix(t, w+"-") || strings.HasPrefix(t, w) && len(t) > len(w) && t[len(w)] >= 'A' && t[len(w)] <= 'Z' {
			return true
		}
	}
	return false
}

// DeriveFileFacts fills a.Facts.Paths for file kinds from the well-known path
// arguments, resolved against a.Cwd, if no analyzer has filled them yet.
// It is the basic derivation every component can rely on; the path guard
// refines it (symlinks, home directory).
func DeriveFileFacts(a *Action) {
	if len(a.Facts.Paths) > 0 {
		return
	}
	if patchFacts(a) {
		return
	}
	var intent PathIntent
	switch a.Kind {
	case KindFileRead:
		intent = PathRead
		if carriesContent(a.Args) {
			// The caller's word for the kind is not trusted: a "read" that
			// carries content to put in the file is a write.
			intent = PathWrite
		}
	case KindFileWrite, KindFileEdit:
		intent = PathWrite
	case KindFileDelete:
		intent = PathDelete
	case KindShell, KindSQL, KindNetFetch, KindPrompt:
		return
	default:
		// Another kind (mcp, other) that names a path: what it does there
		// is not known, unless it carries content (a write) or its name
		// says it only reads.
		switch {
		case carriesContent(a.Args):
			intent = PathWrite
		case readsByName(a.Tool):
			intent = PathRead
		default:
			intent = PathUnknown
		}
	}
	cwd := filepath.Clean(a.Cwd)
	if intent == PathRead {
		// A search narrowed to a file-name pattern (Grep's glob, Glob's
		// pattern) reads the files it matches: judge the pattern's name
		// under the searched directory (".env" under the project).
		if g := globArg(a.Tool, a.Args); g != "" {
			dir, _ := a.Args["path"].(string)
			if dir == "" {
				dir = a.Cwd
			}
			if dir != "" {
				abs := ResolvePath(a.Cwd, filepath.Join(dir, filepath.Base(g)))
				a.Facts.Paths = append(a.Facts.Paths, PathFact{Path: abs, Intent: PathRead,
					InCwd: a.Cwd != "" && filepath.IsAbs(cwd) && Within(cwd, abs)})
			}
		}
	}
	fileKind := a.Kind == KindFileRead || a.Kind == KindFileWrite || a.Kind == KindFileEdit || a.Kind == KindFileDelete
	for _, k := range pathArgKeys {
		p, ok := a.Args[k].(string)
		if !ok || p == "" {
			continue
		}
		if !fileKind && (k == "target" || !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") && a.Cwd == "") {
			// Another kind's "target" is rarely a file (a deploy target),
			// and a relative path with no working directory cannot be
			// placed: neither is judged as a file effect.
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

// patchFacts fills a.Facts.Paths from a patch in the apply_patch format
// (Codex: "*** Begin Patch", "*** Add File: P", "*** Update File: P",
// "*** Delete File: P", "*** Move to: P") carried in any string argument,
// whatever the action's kind. It reports whether a patch was found.
func patchFacts(a *Action) bool {
	found := false
	for _, v := range a.Args {
		s, ok := v.(string)
		if !ok || !strings.Contains(s, "*** Begin Patch") {
			continue
		}
		for _, p := range ParsePatchTargets(s) {
			found = true
			abs := ResolvePath(a.Cwd, p.Path)
			a.Facts.Paths = append(a.Facts.Paths, PathFact{Path: abs, Intent: p.Intent,
				InCwd: a.Cwd != "" && filepath.IsAbs(a.Cwd) && Within(filepath.Clean(a.Cwd), abs)})
		}
	}
	return found
}

// PatchTarget is one file an apply_patch patch touches.
type PatchTarget struct {
	Path   string
	Intent PathIntent // write (add, update, the target of a move) or delete
	Op     string     // add, update, delete, move
}

// ParsePatchTargets returns the files a patch in the apply_patch format
// touches, in order. A moved file is deleted from its old path and
// written to the new one.
func ParsePatchTargets(patch string) []PatchTarget {
	var out []PatchTarget
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.HasPrefix(line, "*** Add File: "):
			out = append(out, PatchTarget{Path: strings.TrimSpace(line[len("*** Add File: "):]), Intent: PathWrite, Op: "add"})
		case strings.HasPrefix(line, "*** Update File: "):
			out = append(out, PatchTarget{Path: strings.TrimSpace(line[len("*** Update File: "):]), Intent: PathWrite, Op: "update"})
		case strings.HasPrefix(line, "*** Delete File: "):
			out = append(out, PatchTarget{Path: strings.TrimSpace(line[len("*** Delete File: "):]), Intent: PathDelete, Op: "delete"})
		case strings.HasPrefix(line, "*** Move to: "):
			if n := len(out); n > 0 && out[n-1].Op == "update" {
				out[n-1].Intent, out[n-1].Op = PathDelete, "move"
			}
			out = append(out, PatchTarget{Path: strings.TrimSpace(line[len("*** Move to: "):]), Intent: PathWrite, Op: "move"})
		}
		if len(out) >= 256 {
			break
		}
	}
	kept := out[:0]
	for _, t := range out {
		if t.Path != "" {
			kept = append(kept, t)
		}
	}
	return kept
}

// globArg returns a search's file-name pattern (Grep's "glob", a Glob
// tool's "pattern"), or "".
func globArg(tool string, args map[string]any) string {
	if g, ok := args["glob"].(string); ok && g != "" {
		return g
	}
	if strings.Contains(strings.ToLower(tool), "glob") {
		if g, ok := args["pattern"].(string); ok {
			return g
		}
	}
	return ""
}
