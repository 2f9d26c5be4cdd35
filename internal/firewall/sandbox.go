package firewall

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
)

// NoteRedirected is the fact note of a write L4 redirected into the output
// directory: "sandbox.redirected: FROM -> TO".
const NoteRedirected = "sandbox.redirected"

// RedirectOutput is L4's output-directory rewriting for the builtin
// file_write tool (settings.sandbox.output_dir): a write to a path outside
// the working directory and outside the output directory is made to land
// under the output directory instead, at the same path below it (/etc/x.conf
// → OUTPUT/etc/x.conf), and is then judged there. It changes a's file_path
// and returns the path asked for and the path written; ok is false when
// nothing was redirected. Other tools' writes (shell commands, edits of
// existing files) cannot be moved and are judged where they are.
func RedirectOutput(a *action.Action, outputDir string) (from, to string, ok bool) {
	if outputDir == "" || a.Kind != action.KindFileWrite {
		return "", "", false
	}
	p, isStr := a.Args["file_path"].(string)
	if !isStr || strings.TrimSpace(p) == "" {
		return "", "", false
	}
	out := expandHome(outputDir)
	if !filepath.IsAbs(out) {
		return "", "", false
	}
	out = filepath.Clean(out)
	abs := expandHome(p)
	if !filepath.IsAbs(abs) {
		if a.Cwd == "" {
			return "", "", false
		}
		abs = filepath.Join(a.Cwd, abs)
	}
	abs = filepath.Clean(abs)
	if (a.Cwd != "" && action.Within(filepath.Clean(a.Cwd), abs)) || action.Within(out, abs) {
		return "", "", false
	}
	to = filepath.Join(out, strings.TrimPrefix(abs, string(filepath.Separator)))
	a.Args["file_path"] = to
	a.Facts.Notes = append(a.Facts.Notes, fmt.Sprintf("%s: %s -> %s", NoteRedirected, abs, to))
	return abs, to, true
}

// RedirectedNotice is what the model is told about a redirected write.
func RedirectedNotice(from, to string) string {
	return fmt.Sprintf("Overseer: %s is outside the working directory; the file was written to %s instead (the output directory). Use that path from now on.", from, to)
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, rest)
		}
	}
	return p
}
