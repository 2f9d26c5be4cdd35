package tracked

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// gitRepo makes a repository with real git (the index reader is checked
// against what git itself writes), or skips the test when git is missing.
func gitRepo(t *testing.T, initArgs ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is needed to write the indexes these tests read")
		}
		t.Skip("SKIPPED: git is not installed")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git(t, dir, append([]string{"init", "-q"}, initArgs...)...)
	for _, f := range []string{"go.mod", "internal/store/store.go", "internal/store/sqlite/db.go", "internal/storeutil/x.go", "README.md", "docs/a b.md"} {
		write(t, filepath.Join(dir, f), "x\n")
	}
	write(t, filepath.Join(dir, ".gitignore"), "bin/\n")
	write(t, filepath.Join(dir, "bin/overseer"), "binary\n")
	write(t, filepath.Join(dir, "scratch/notes.go"), "untracked\n")
	git(t, dir, "add", "go.mod", "internal", "README.md", "docs", ".gitignore")
	return dir
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

var root = os.DirFS("/")

func TestFindInRepository(t *testing.T) {
	variants := []struct {
		name  string
		init  []string
		after [][]string
	}{
		{"v2", nil, nil},
		{"v3 intent-to-add", nil, [][]string{{"add", "-N", "scratch/notes.go"}}},
		{"v4", nil, [][]string{{"update-index", "--index-version", "4"}}},
		{"split index", nil, [][]string{{"update-index", "--split-index"}, {"add", "-N", "scratch/notes.go"}}},
		{"sha256", []string{"--object-format=sha256"}, nil},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			dir := gitRepo(t, v.init...)
			for _, a := range v.after {
				git(t, dir, a...)
			}
			cases := []struct {
				path  string
				total int
				first string
			}{
				{"internal/store", 2, "internal/store/sqlite/db.go"},
				{"internal/store/", 2, ""},
				{"internal", 3, ""},
				{"internal/storeutil", 1, "internal/storeutil/x.go"},
				{"README.md", 1, "README.md"},
				{"docs", 1, "docs/a b.md"},
				{"bin", 0, ""}, // ignored
				{"bin/overseer", 0, ""},
				{"nothing-here", 0, ""},
			}
			ita := strings.Contains(v.name, "intent-to-add") || strings.Contains(v.name, "split")
			all := 7
			if ita {
				all = 8
			}
			cases = append(cases, struct {
				path  string
				total int
				first string
			}{".", all, ""})
			if ita {
				cases = append(cases, struct {
					path  string
					total int
					first string
				}{"scratch", 1, "scratch/notes.go"})
			} else {
				cases = append(cases, struct {
					path  string
					total int
					first string
				}{"scratch", 0, ""})
			}
			for _, c := range cases {
				r := Find(root, filepath.Join(dir, c.path), 10)
				if r.Repo != dir || !r.Complete || r.Err != nil {
					t.Fatalf("%s: repo %q complete %v err %v", c.path, r.Repo, r.Complete, r.Err)
				}
				if r.Total != c.total || len(r.Files) != c.total {
					t.Errorf("%s: %d tracked %v, want %d", c.path, r.Total, r.Files, c.total)
				}
				if c.first != "" && (len(r.Files) == 0 || r.Files[0] != filepath.Join(dir, c.first)) {
					t.Errorf("%s: files %v, want first %s", c.path, r.Files, c.first)
				}
			}
		})
	}
}

func TestFindWorktreeAndLimit(t *testing.T) {
	dir := gitRepo(t)
	git(t, dir, "commit", "-qm", "init")
	wt := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-wt")
	git(t, dir, "worktree", "add", "-q", wt)
	t.Cleanup(func() { os.RemoveAll(wt) })
	r := Find(root, filepath.Join(wt, "internal"), 1)
	if r.Repo != wt || r.Total != 3 || len(r.Files) != 1 || !r.Complete {
		t.Fatalf("worktree: %+v", r)
	}
}

func TestFindOutsideRepository(t *testing.T) {
	fsys := fstest.MapFS{
		"w/proj/main.go":                     {Data: []byte("package main")},
		"w/proj/lib/util.py":                 {Data: []byte("x")},
		"w/proj/node_modules/x/index.js":     {Data: []byte("x")},
		"w/proj/README":                      {Data: []byte("x")},
		"w/cache/node_modules/left-pad/i.js": {Data: []byte("x")},
		"w/out/a.o":                          {Data: []byte("x")},
		"w/out/b.bin":                        {Data: []byte("x")},
		"w/single.rs":                        {Data: []byte("x")},
		"w/link":                             {Data: []byte("proj"), Mode: fs.ModeSymlink},
	}
	cases := []struct {
		path  string
		total int
	}{
		{"/w/proj", 2}, {"/w/link", 0}, {"/w/cache", 0}, {"/w/cache/node_modules", 0}, {"/w/out", 0}, {"/w/single.rs", 1}, {"/w/missing", 0},
	}
	for _, c := range cases {
		r := Find(fsys, c.path, 10)
		if r.Repo != "" || r.Total != c.total || !r.Complete {
			t.Errorf("%s: %+v, want %d source files", c.path, r, c.total)
		}
	}
	r := Find(fsys, "/w/proj", 10)
	if !slices.Contains(r.Files, "/w/proj/main.go") {
		t.Errorf("files %v", r.Files)
	}
}

func TestScanIsBounded(t *testing.T) {
	fsys := fstest.MapFS{}
	for i := 0; i < MaxScanEntries+10; i++ {
		fsys["big/d/f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+time.Duration(i).String()] = &fstest.MapFile{Data: []byte("x")}
	}
	r := Find(fsys, "/big", 10)
	if r.Complete || !r.Any() {
		t.Fatalf("an unfinished scan must not say nothing is there: %+v", r)
	}
}

func TestParseIndexRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("DIRC"), []byte("DIRC\x00\x00\x00\x02\xff\xff\xff\xff"), []byte("XXXX\x00\x00\x00\x02\x00\x00\x00\x00")} {
		if _, err := parseIndex(b, 20, time.Now().Add(time.Second)); err == nil {
			t.Errorf("%q: no error", b)
		}
	}
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00"), 20)
	if b, err := os.ReadFile(filepath.Join("testdata", "index-v4")); err == nil {
		f.Add(b, 20)
	}
	f.Fuzz(func(t *testing.T, data []byte, hashLen int) {
		if hashLen != 20 && hashLen != 32 {
			hashLen = 20
		}
		ix, err := parseIndex(data, hashLen, time.Now().Add(time.Second))
		if err != nil {
			return
		}
		if !slices.IsSorted(ix.names) {
			t.Fatal("names not sorted")
		}
		for _, n := range ix.names {
			if n == "" || strings.HasPrefix(n, "/") {
				t.Fatalf("bad name %q", n)
			}
		}
	})
}
