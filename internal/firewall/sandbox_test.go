package firewall_test

import (
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/firewall"
)

func TestRedirectOutput(t *testing.T) {
	for _, tc := range []struct {
		name, kind, path, out, want string
	}{
		{"outside", "file_write", "/etc/app.conf", "/srv/out", "/srv/out/etc/app.conf"},
		{"relative escape", "file_write", "../other/x.txt", "/srv/out", "/srv/out/home/u/other/x.txt"},
		{"inside the working directory", "file_write", "notes.txt", "/srv/out", ""},
		{"inside the output directory", "file_write", "/srv/out/a/b", "/srv/out", ""},
		{"dot-dot into the output directory", "file_write", "/srv/out/../out/x", "/srv/out", ""},
		{"dot-dot out of the output directory", "file_write", "/srv/out/../secret", "/srv/out", "/srv/out/srv/secret"},
		{"no output directory", "file_write", "/etc/app.conf", "", ""},
		{"relative output directory", "file_write", "/etc/app.conf", "out", ""},
		{"an edit is not moved", "file_edit", "/etc/app.conf", "/srv/out", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &action.Action{Tool: "file_write", Kind: action.Kind(tc.kind), Cwd: "/home/u/proj",
				Args: map[string]any{"file_path": tc.path, "content": "x"}}
			_, to, ok := firewall.RedirectOutput(a, tc.out)
			if tc.want == "" {
				if ok || a.Args["file_path"] != tc.path {
					t.Fatalf("redirected to %s", to)
				}
				return
			}
			if !ok || to != tc.want || a.Args["file_path"] != tc.want || len(a.Facts.Notes) != 1 || !strings.HasPrefix(a.Facts.Notes[0], firewall.NoteRedirected) {
				t.Fatalf("to %q ok %v args %v notes %v", to, ok, a.Args, a.Facts.Notes)
			}
		})
	}
}
