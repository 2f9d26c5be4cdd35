package shell

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/guard"
)

// tree creates files (and their directories) under root; names ending in
// "/" are directories.
func tree(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, n)
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func findingOf(t *testing.T, an Analysis, check string) guard.Finding {
	t.Helper()
	for _, f := range an.Findings {
		if f.Check == check {
			return f
		}
	}
	t.Fatalf("no finding %s\n%s", check, describe(an))
	return guard.Finding{}
}

// The previews read the real file system of a temporary directory: the
// analysis gets its absolute path as the working directory and no FS, so
// it uses the operating system's.
func TestPreviews(t *testing.T) {
	type want struct {
		items   []string
		more    int
		summary string // substring
	}
	tests := []struct {
		name  string
		files []string
		cmd   string
		check string
		want  want
	}{
		{
			name:  "glob lists matches, skips hidden files and other names",
			files: []string{"a.log", "b.log", ".hidden.log", "keep.txt"},
			cmd:   "rm -f *.log", check: "shell.rm-wildcard",
			want: want{items: []string{"a.log", "b.log"}, summary: "rm would remove 2 path(s)"},
		},
		{
			name:  "glob in a directory counts the files of subdirectories",
			files: []string{"build/a/1.o", "build/a/2.o", "build/a/deep/3.o", "build/b.txt"},
			cmd:   "rm -rf build/*", check: "shell.rm-wildcard",
			want: want{items: []string{"build/a/ (3 files)", "build/b.txt"}},
		},
		{
			name:  "glob that matches nothing",
			files: []string{"keep.txt"},
			cmd:   "rm -rf tmp_*", check: "shell.rm-wildcard",
			want: want{summary: "tmp_* matches nothing"},
		},
		{
			name:  "source directory",
			files: []string{"src/main.go", "src/util/u.go", "README.md"},
			cmd:   "rm -rf src", check: "shell.rm-source",
			want: want{items: []string{"src/ (2 files)"}},
		},
		{
			name:  "working directory",
			files: []string{"a", "b/c"},
			cmd:   "rm -rf .", check: "shell.rm-cwd",
			want: want{items: []string{"./ (2 files)"}},
		},
		{
			name:  "missing target",
			files: []string{"x"},
			cmd:   "rm -rf lib", check: "shell.rm-source",
			want: want{items: []string{"lib (does not exist)"}},
		},
		{
			name:  "find -delete by name and type",
			files: []string{"a.tmp", "sub/b.tmp", "sub/deeper/c.tmp", "sub/keep.go", "d.tmp/"},
			cmd:   "find . -type f -name '*.tmp' -delete", check: "shell.find-delete",
			want: want{items: []string{"a.tmp", "sub/b.tmp", "sub/deeper/c.tmp"}, summary: "find would delete 3 path(s)"},
		},
		{
			name:  "find -delete honours maxdepth and iname",
			files: []string{"A.TMP", "sub/b.tmp"},
			cmd:   "find . -maxdepth 1 -iname '*.tmp' -delete", check: "shell.find-delete",
			want: want{items: []string{"A.TMP"}},
		},
		{
			name:  "find -exec rm previews like -delete",
			files: []string{"x.bak", "pkg/y.bak", "pkg/z.py"},
			cmd:   `find . -name '*.bak' -exec rm -f {} \;`, check: "shell.find-delete",
			want: want{items: []string{"pkg/y.bak", "x.bak"}},
		},
		{
			name:  "find with operators is not previewed",
			files: []string{"a.tmp"},
			cmd:   "find . \\( -name '*.tmp' -o -name '*.bak' \\) -delete", check: "shell.find-delete",
			want: want{summary: "not previewed: the expression is too complex"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tree(t, dir, tt.files...)
			an := Analyze(tt.cmd, Env{Cwd: dir, Home: "/nonexistent-home"})
			f := findingOf(t, an, tt.check)
			if f.Preview == nil {
				t.Fatalf("finding %s has no preview", tt.check)
			}
			items := slices.Clone(f.Preview.Items)
			slices.Sort(items)
			if tt.want.items != nil && !slices.Equal(items, tt.want.items) {
				t.Errorf("items = %q, want %q", items, tt.want.items)
			}
			if tt.want.items == nil && len(items) != 0 {
				t.Errorf("items = %q, want none", items)
			}
			if f.Preview.More != tt.want.more {
				t.Errorf("more = %d, want %d", f.Preview.More, tt.want.more)
			}
			if !strings.Contains(f.Preview.Summary, tt.want.summary) {
				t.Errorf("summary = %q, want it to contain %q", f.Preview.Summary, tt.want.summary)
			}
			// Previews only read: every file is still there.
			for _, n := range tt.files {
				if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
					t.Errorf("%s: %v", n, err)
				}
			}
		})
	}
}

func TestPreviewCapsWithMore(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := range 27 {
		files = append(files, fmt.Sprintf("f%02d.log", i))
	}
	tree(t, dir, files...)

	t.Run("default limit", func(t *testing.T) {
		an := Analyze("rm *.log", Env{Cwd: dir})
		pv := findingOf(t, an, "shell.rm-wildcard").Preview
		if len(pv.Items) != 20 || pv.More != 7 {
			t.Errorf("items = %d, more = %d; want 20 and 7", len(pv.Items), pv.More)
		}
		if !strings.Contains(pv.Summary, "27 path(s)") {
			t.Errorf("summary = %q", pv.Summary)
		}
	})
	t.Run("configured limit", func(t *testing.T) {
		g, err := New(Config{PreviewLimit: 5})
		if err != nil {
			t.Fatal(err)
		}
		pv := findingOf(t, g.Analyze("rm *.log", Env{Cwd: dir}), "shell.rm-wildcard").Preview
		if len(pv.Items) != 5 || pv.More != 22 {
			t.Errorf("items = %d, more = %d; want 5 and 22", len(pv.Items), pv.More)
		}
	})
}

func TestPreviewSymlinkNotFollowed(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	tree(t, outside, "precious/1", "precious/2")
	tree(t, dir, "build/x.o")
	if err := os.Symlink(filepath.Join(outside, "precious"), filepath.Join(dir, "build", "link")); err != nil {
		t.Skip("symlinks not supported:", err)
	}
	pv := findingOf(t, Analyze("rm -rf build/*", Env{Cwd: dir}), "shell.rm-wildcard").Preview
	items := slices.Clone(pv.Items)
	slices.Sort(items)
	want := []string{"build/link (symbolic link)", "build/x.o"}
	if !slices.Equal(items, want) {
		t.Errorf("items = %q, want %q", items, want)
	}
}

func TestPreviewUnknownCwd(t *testing.T) {
	an := Analyze("rm -rf *.log", Env{})
	f := findingOf(t, an, "shell.rm-wildcard")
	if f.Level.String() != "approve" || !strings.Contains(f.Preview.Summary, "not known") {
		t.Errorf("finding = %+v, preview = %+v", f, f.Preview)
	}
}
