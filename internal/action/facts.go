package action

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
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
var contentArgKeys = []string{"content", "contents", "file_text", "new_string", "new_str", "edits", "text", "data", "patch", "diff"}

// carriesContent reports whether args carry content to put into a file.
func carriesContent(args map[string]any) bool {
	for _, k := range contentArgKeys {
		if _, ok := args[k]; ok {
			return true
		}
	}
	return false
}

// WrittenText returns the text args carry to put into a file (under the
// contentArgKeys: a write's content, an edit's new string, a patch, and
// each new string of an edit list), one piece a line.
func WrittenText(args map[string]any) string {
	var parts []string
	for _, k := range contentArgKeys {
		switch v := args[k].(type) {
		case string:
			parts = append(parts, v)
		case []any:
			for _, e := range v {
				m, _ := e.(map[string]any)
				for _, ek := range []string{"new_string", "new_str", "content"} {
					if s, ok := m[ek].(string); ok {
						parts = append(parts, s)
					}
				}
			}
		}
	}
	return strings.Join(parts, "\n")
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
		case ReadsByName(a.Tool):
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
	if a.Kind == KindMCP {
		// An MCP tool passes paths under names of its own and in lists
		// (read_multiple_files' paths, filePath, source, directory, a
		// nested object): each is judged as the named ones are. A value
		// under another name counts when it is plainly a path (absolute,
		// ~/…, file://, no blanks). Not other kinds: an agent's own tools
		// pass text that starts with a slash (SlashCommand's "/review").
		for _, p := range otherArgPaths(a.Args, a.Cwd != "") {
			abs := ResolvePath(a.Cwd, p)
			f := PathFact{Path: abs, Intent: intent, InCwd: a.Cwd != "" && filepath.IsAbs(cwd) && Within(cwd, abs)}
			if !slices.Contains(a.Facts.Paths, f) {
				a.Facts.Paths = append(a.Facts.Paths, f)
			}
		}
	}
}

// otherPathKeys are more argument names (lower case, without _ and -)
// under which tools pass a path or a list of paths.
var otherPathKeys = map[string]bool{
	"paths": true, "filepath": true, "filepaths": true, "filename": true, "filenames": true, "files": true,
	"source": true, "sources": true, "src": true, "dir": true, "dirs": true, "directory": true, "directories": true,
	"folder": true, "folders": true, "dest": true, "destination": true, "root": true, "uri": true, "uris": true,
	"location": true, "file": true, "path": true, "notebookpath": true,
}

// maxOtherPaths bounds the paths taken from one action's arguments.
const maxOtherPaths = 256

// otherArgPaths returns the paths among args beyond the top-level string
// values of pathArgKeys (which DeriveFileFacts takes itself): values
// under otherPathKeys (relative ones only when relCwd: there is a working
// directory to place them in), at any depth and in lists, and values
// under any other name that are plainly paths.
func otherArgPaths(args map[string]any, relCwd bool) []string {
	var out []string
	var walk func(v any, named bool, depth int)
	take := func(s string, named bool) {
		s = strings.TrimSpace(s)
		if s == "" || strings.ContainsAny(s, "\n\x00") || len(out) >= maxOtherPaths {
			return
		}
		if rest, ok := strings.CutPrefix(s, "file://"); ok {
			if i := strings.IndexByte(rest, '/'); i >= 0 && (i == 0 || strings.EqualFold(rest[:i], "localhost")) {
				s = rest[i:]
			} else {
				return
			}
		}
		switch {
		case filepath.IsAbs(s), s == "~", strings.HasPrefix(s, "~/"):
		case named && relCwd && !strings.Contains(s, "://"):
		default:
			return
		}
		if !named && strings.ContainsAny(s, " \t") {
			return // text that starts with a slash ("/etc/passwd format")
		}
		out = append(out, s)
	}
	walk = func(v any, named bool, depth int) {
		if depth > 8 || len(out) >= maxOtherPaths {
			return
		}
		switch v := v.(type) {
		case string:
			take(v, named)
		case []any:
			for _, x := range v {
				walk(x, named, depth+1)
			}
		case []string:
			for _, x := range v {
				take(x, named)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				nk := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(k))
				walk(v[k], otherPathKeys[nk], depth+1)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		if depth0Taken(k, args[k]) {
			continue
		}
		nk := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(k))
		walk(args[k], otherPathKeys[nk], 0)
	}
	return out
}

// depth0Taken reports whether DeriveFileFacts took args[k] already (a
// string under pathArgKeys), or leaves it alone (another kind's "target",
// rarely a file).
func depth0Taken(k string, v any) bool {
	if k == "target" {
		return true
	}
	_, isString := v.(string)
	return isString && slices.Contains(pathArgKeys, k)
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
	return "" // a Glob tool's pattern is judged with the tool tables (tools.go)
}

// maxPatchPreview caps the diff a patch preview carries.
const maxPatchPreview = 64 << 10

// PatchPreview shows a person what a patch in the apply_patch format,
// carried in any string argument of a, does: one item per file (added,
// updated, deleted, moved, with its added and removed lines) and the diff
// of each file in the unified form. It is nil when a carries no patch.
func PatchPreview(a *Action) *Preview {
	for _, k := range slices.Sorted(maps.Keys(a.Args)) {
		s, ok := a.Args[k].(string)
		if !ok || !strings.Contains(s, "*** Begin Patch") {
			continue
		}
		if p := patchPreview(s); p != nil {
			return p
		}
	}
	return nil
}

// patchFile is one file's section of a patch.
type patchFile struct {
	op, path, to string
	lines        []string
	added, gone  int
}

func patchPreview(patch string) *Preview {
	var files []*patchFile
	var cur *patchFile
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.HasPrefix(line, "*** Add File: "):
			cur = &patchFile{op: "add", path: strings.TrimSpace(line[len("*** Add File: "):])}
			files = append(files, cur)
		case strings.HasPrefix(line, "*** Update File: "):
			cur = &patchFile{op: "update", path: strings.TrimSpace(line[len("*** Update File: "):])}
			files = append(files, cur)
		case strings.HasPrefix(line, "*** Delete File: "):
			cur = &patchFile{op: "delete", path: strings.TrimSpace(line[len("*** Delete File: "):])}
			files = append(files, cur)
		case strings.HasPrefix(line, "*** Move to: ") && cur != nil:
			cur.op, cur.to = "move", strings.TrimSpace(line[len("*** Move to: "):])
		case strings.HasPrefix(line, "*** "):
			// *** End Patch, *** End of File, *** Begin Patch
		case cur == nil:
		default:
			cur.lines = append(cur.lines, line)
			switch {
			case strings.HasPrefix(line, "+"):
				cur.added++
			case strings.HasPrefix(line, "-"):
				cur.gone++
			}
		}
		if len(files) >= 256 {
			break
		}
	}
	if len(files) == 0 {
		return nil
	}
	p := &Preview{}
	var diff strings.Builder
	counts := map[string]int{}
	for _, f := range files {
		counts[f.op]++
		switch f.op {
		case "add":
			p.Items = append(p.Items, fmt.Sprintf("add %s (+%d)", f.path, f.added))
			fmt.Fprintf(&diff, "--- /dev/null\n+++ b/%s\n", f.path)
		case "delete":
			p.Items = append(p.Items, fmt.Sprintf("delete %s", f.path))
			fmt.Fprintf(&diff, "--- a/%s\n+++ /dev/null\n(the whole file is deleted)\n", f.path)
		case "move":
			p.Items = append(p.Items, fmt.Sprintf("move %s → %s (+%d −%d)", f.path, f.to, f.added, f.gone))
			fmt.Fprintf(&diff, "--- a/%s\n+++ b/%s\n", f.path, f.to)
		default:
			p.Items = append(p.Items, fmt.Sprintf("update %s (+%d −%d)", f.path, f.added, f.gone))
			fmt.Fprintf(&diff, "--- a/%s\n+++ b/%s\n", f.path, f.path)
		}
		if f.op == "add" && (len(f.lines) == 0 || !strings.HasPrefix(f.lines[0], "@@")) {
			fmt.Fprintf(&diff, "@@ -0,0 +1,%d @@\n", f.added)
		}
		for _, l := range f.lines {
			diff.WriteString(l)
			diff.WriteByte('\n')
		}
		if diff.Len() > maxPatchPreview {
			break
		}
	}
	var parts []string
	for _, op := range []string{"add", "update", "move", "delete"} {
		if n := counts[op]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", op, n))
		}
	}
	p.Summary = fmt.Sprintf("apply_patch changes %d file(s): %s", len(files), strings.Join(parts, ", "))
	d := diff.String()
	if len(d) > maxPatchPreview {
		d = d[:maxPatchPreview] + "\n… (truncated)\n"
	}
	p.Diff = d
	return p
}
