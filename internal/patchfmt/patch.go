// Package patchfmt reads patches in Codex's apply_patch format: the files
// a patch adds, updates, moves and deletes, the content an added file gets
// and an update applied to (or reversed from) a file's content. The undo
// store reverses patches with it, the ingester reads Codex's rollouts, and
// the shell guard judges what a patch leaves in a file that runs later.
package patchfmt

import (
	"errors"
	"fmt"
	"strings"
)

// Codex's apply_patch format. A Codex rollout holds the patch a call
// applied, not the file's previous content: where the file is now what the
// patch made it, reversing the patch gives the content before it.
//
//	*** Begin Patch
//	*** Add File: path            then +lines
//	*** Delete File: path
//	*** Update File: path         [*** Move to: path] then chunks:
//	@@ [a line above the change]
//	 context / -removed / +added lines
//	*** End of File               (the chunk ends the file)
//	*** End Patch

// PatchFile is one file operation of a patch.
type PatchFile struct {
	Op     string // add, delete, update
	Path   string // as written in the patch
	MoveTo string // update: the new path, if moved
	// Body is the operation's lines after its header (add: the +lines;
	// update: its chunks), joined by new lines.
	Body string
}

// ErrPatch: the text is not a patch in the apply_patch format.
var ErrPatch = errors.New("not an apply_patch patch")

// ErrPatchMismatch: the file is not what the patch made it (or would
// make it), so it cannot be reversed.
var ErrPatchMismatch = errors.New("the file does not match the patch")

// maxPatchFiles bounds the operations read from one patch.
const maxPatchFiles = 256

// ParsePatch splits a patch into its file operations.
func ParsePatch(patch string) ([]PatchFile, error) {
	lines := strings.Split(strings.ReplaceAll(patch, "\r\n", "\n"), "\n")
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i >= len(lines) || strings.TrimSpace(lines[i]) != "*** Begin Patch" {
		return nil, ErrPatch
	}
	i++
	var out []PatchFile
	var body []string
	flush := func() {
		if n := len(out); n > 0 {
			out[n-1].Body = strings.Join(body, "\n")
		}
		body = nil
	}
	for ; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.TrimSpace(l) == "*** End Patch":
			flush()
			return out, nil
		case strings.HasPrefix(l, "*** Add File: "):
			flush()
			out = append(out, PatchFile{Op: "add", Path: strings.TrimSpace(l[len("*** Add File: "):])})
		case strings.HasPrefix(l, "*** Delete File: "):
			flush()
			out = append(out, PatchFile{Op: "delete", Path: strings.TrimSpace(l[len("*** Delete File: "):])})
		case strings.HasPrefix(l, "*** Update File: "):
			flush()
			out = append(out, PatchFile{Op: "update", Path: strings.TrimSpace(l[len("*** Update File: "):])})
		case strings.HasPrefix(l, "*** Move to: "):
			n := len(out)
			if n == 0 || out[n-1].Op != "update" || len(body) > 0 || out[n-1].MoveTo != "" {
				return nil, fmt.Errorf("%w: a move outside an update's header", ErrPatch)
			}
			out[n-1].MoveTo = strings.TrimSpace(l[len("*** Move to: "):])
		default:
			if len(out) == 0 {
				if strings.TrimSpace(l) == "" {
					continue
				}
				return nil, fmt.Errorf("%w: a line before the first file", ErrPatch)
			}
			body = append(body, l)
		}
		if len(out) > maxPatchFiles {
			return nil, fmt.Errorf("%w: more than %d files", ErrPatch, maxPatchFiles)
		}
		if out[len(out)-1].Path == "" {
			return nil, fmt.Errorf("%w: a file operation without a path", ErrPatch)
		}
	}
	return nil, fmt.Errorf("%w: no *** End Patch", ErrPatch)
}

// AddedContent returns the content an add operation's body writes.
func AddedContent(body string) (string, error) {
	if body == "" {
		return "", nil
	}
	var b strings.Builder
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, "+") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			return "", fmt.Errorf("%w: an added file's line without +", ErrPatch)
		}
		b.WriteString(l[1:])
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// chunk is one @@ section of an update.
type chunk struct {
	ctx      string // the line the @@ names ("" none)
	hasCtx   bool
	old, new []string
	eof      bool
}

func parseChunks(body string) ([]chunk, error) {
	var out []chunk
	cur := -1
	for _, l := range strings.Split(body, "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			c := chunk{}
			if rest := strings.TrimPrefix(l, "@@"); strings.TrimSpace(rest) != "" {
				c.ctx, c.hasCtx = strings.TrimPrefix(rest, " "), true
			}
			out = append(out, c)
			cur = len(out) - 1
			continue
		case l == "*** End of File":
			if cur < 0 {
				return nil, fmt.Errorf("%w: end of file outside a chunk", ErrPatch)
			}
			out[cur].eof = true
			continue
		}
		if cur < 0 {
			if strings.TrimSpace(l) == "" {
				continue
			}
			// The first chunk may start without @@.
			out = append(out, chunk{})
			cur = 0
		}
		c := &out[cur]
		switch {
		case l == "":
			// An empty context line (some models drop the space).
			c.old, c.new = append(c.old, ""), append(c.new, "")
		case l[0] == ' ':
			c.old, c.new = append(c.old, l[1:]), append(c.new, l[1:])
		case l[0] == '-':
			c.old = append(c.old, l[1:])
		case l[0] == '+':
			c.new = append(c.new, l[1:])
		default:
			return nil, fmt.Errorf("%w: a chunk line %q", ErrPatch, clipLine(l))
		}
	}
	// A trailing empty "context" line is the patch's last new line.
	for i := range out {
		c := &out[i]
		for len(c.old) > 0 && len(c.new) > 0 && c.old[len(c.old)-1] == "" && c.new[len(c.new)-1] == "" {
			c.old, c.new = c.old[:len(c.old)-1], c.new[:len(c.new)-1]
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: an update without chunks", ErrPatch)
	}
	return out, nil
}

func clipLine(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// fileLines splits content as apply_patch does: the new line at the end
// ends the last line.
func fileLines(content string) []string {
	if content == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(content, "\n"), "\n")
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

func matchAt(lines, pat []string, i int) bool {
	if i < 0 || i+len(pat) > len(lines) {
		return false
	}
	for j, p := range pat {
		if lines[i+j] != p {
			return false
		}
	}
	return true
}

// apply applies chunks to content exactly (no loose matching). With
// unique set, each chunk's lines must occur once where they are looked
// for, so the place is certain.
func apply(content string, chunks []chunk, unique bool) (string, error) {
	lines := fileLines(content)
	type repl struct {
		at, n int
		with  []string
	}
	var rs []repl
	idx := 0
	for _, c := range chunks {
		if c.hasCtx {
			found := -1
			for i := idx; i < len(lines); i++ {
				if lines[i] == c.ctx {
					found = i
					break
				}
			}
			if found < 0 {
				return "", fmt.Errorf("%w: the line %q is not there", ErrPatchMismatch, clipLine(c.ctx))
			}
			idx = found + 1
		}
		if len(c.old) == 0 {
			rs = append(rs, repl{at: len(lines), with: c.new})
			continue
		}
		at := -1
		if c.eof && matchAt(lines, c.old, len(lines)-len(c.old)) {
			at = len(lines) - len(c.old)
		} else if c.eof && unique {
			return "", fmt.Errorf("%w: the end of the file differs", ErrPatchMismatch)
		} else {
			for i := idx; i+len(c.old) <= len(lines); i++ {
				if matchAt(lines, c.old, i) {
					if at >= 0 {
						return "", fmt.Errorf("%w: the lines occur more than once", ErrPatchMismatch)
					}
					at = i
					if !unique {
						break
					}
				}
			}
		}
		if at < 0 {
			return "", fmt.Errorf("%w: the lines are not there", ErrPatchMismatch)
		}
		rs = append(rs, repl{at: at, n: len(c.old), with: c.new})
		idx = at + len(c.old)
	}
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		if i > 0 && rs[i-1].at+rs[i-1].n > r.at {
			return "", fmt.Errorf("%w: chunks overlap", ErrPatchMismatch)
		}
		lines = append(lines[:r.at], append(append([]string(nil), r.with...), lines[r.at+r.n:]...)...)
	}
	return joinLines(lines), nil
}

// ApplyUpdate applies an update operation's body to content, exactly.
func ApplyUpdate(content, body string) (string, error) {
	cs, err := parseChunks(body)
	if err != nil {
		return "", err
	}
	return apply(content, cs, false)
}

// ReverseUpdate returns the content before an update operation, given the
// content after it: each chunk's new lines, found once where the patch put
// them, are replaced by its old lines; then the patch applied to the result
// must give content back exactly. Otherwise the file is not what the patch
// made it (ErrPatchMismatch). Lines of context the patch matched loosely
// (apply_patch forgives trailing white space) come back as the patch
// wrote them, and a file that had no new line at its end gets one.
func ReverseUpdate(content, body string) (string, error) {
	cs, err := parseChunks(body)
	if err != nil {
		return "", err
	}
	rev := make([]chunk, len(cs))
	for i, c := range cs {
		rev[i] = chunk{ctx: c.ctx, hasCtx: c.hasCtx, old: c.new, new: c.old, eof: c.eof || len(c.old) == 0}
		if len(c.new) == 0 {
			// A chunk that only removed lines leaves nothing to find.
			return "", fmt.Errorf("%w: a chunk that only removes lines cannot be placed", ErrPatchMismatch)
		}
	}
	before, err := apply(content, rev, true)
	if err != nil {
		return "", err
	}
	again, err := apply(before, cs, false)
	if err != nil || again != content {
		return "", fmt.Errorf("%w: the patch applied to the reconstructed content does not give the file", ErrPatchMismatch)
	}
	return before, nil
}
