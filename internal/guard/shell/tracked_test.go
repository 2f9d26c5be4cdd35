package shell

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// Deleting files git tracks (or, outside a repository, source files) asks
// a person and lists them; untracked outputs and ignored files do not.
func TestRemoveTracked(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is needed to write the index this test reads")
		}
		t.Skip("SKIPPED: git is not installed")
	}
	root := t.TempDir()
	proj := root + "/home/u/proj"
	tree(t, root, "home/u/proj/internal/store/store.go", "home/u/proj/internal/store/sqlite/db.go",
		"home/u/proj/main.go", "home/u/proj/bin/overseer", "home/u/proj/tmp_out/report.txt",
		"home/u/proj/node_modules/x/index.js", "home/u/notes/draft.go", "home/u/notes/todo.txt",
		"tmp/scratch/gen.go", "home/u/proj/.gitignore")
	if err := os.WriteFile(proj+"/.gitignore", []byte("bin/\nnode_modules/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "git init -q && git add internal main.go .gitignore")
	cmd.Dir = proj
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git: %v %s", err, out)
	}
	env := Env{Cwd: "/home/u/proj", Home: "/home/u", FS: os.DirFS(root)}
	tests := []struct {
		cmd   string
		level action.Level
		check string
		items []string
	}{
		{"rm -rf ./internal/store", action.Confirm, "shell.rm-tracked", []string{"/home/u/proj/internal/store/sqlite/db.go", "/home/u/proj/internal/store/store.go"}},
		{"rm -rf internal/store/sqlite", action.Confirm, "shell.rm-tracked", []string{"/home/u/proj/internal/store/sqlite/db.go"}},
		{"rm main.go", action.Confirm, "shell.rm-tracked", []string{"/home/u/proj/main.go"}},
		{"cd internal && rm -r store", action.Confirm, "shell.rm-tracked", nil},
		{"rm -rf bin", action.Notify, "", nil},          // ignored
		{"rm -rf node_modules", action.Notify, "", nil}, // ignored
		{"rm -rf tmp_out", action.Notify, "", nil},      // untracked output
		{"rm -rf ../notes", action.Confirm, "shell.rm-source-files", []string{"/home/u/notes/draft.go"}},
		{"rm -rf /tmp/scratch", action.Notify, "", nil}, // a scratch directory
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			an := Analyze(tt.cmd, env)
			if an.Level != tt.level {
				t.Fatalf("level %s, want %s\n%s", an.Level, tt.level, describe(an))
			}
			if tt.check == "" {
				for _, f := range an.Findings {
					if strings.HasPrefix(f.Check, "shell.rm-tracked") || f.Check == "shell.rm-source-files" {
						t.Fatalf("unexpected %s", f.Check)
					}
				}
				return
			}
			for _, f := range an.Findings {
				if f.Check != tt.check {
					continue
				}
				if f.Preview == nil || !f.Hard {
					t.Fatalf("%s: no preview, or not a floor: %+v", f.Check, f)
				}
				for _, it := range tt.items {
					found := false
					for _, got := range f.Preview.Items {
						found = found || got == it
					}
					if !found {
						t.Errorf("preview %v lacks %s", f.Preview.Items, it)
					}
				}
				return
			}
			t.Fatalf("no %s finding\n%s", tt.check, describe(an))
		})
	}
}
