package paths

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// dirFixture is the guard's fixture tree plus a chain of links near the
// limit on links: chain/l0 -> l1 -> ... -> l44 -> the project.
func dirFixture(tb testing.TB) (*fixture, []string, []string) {
	tb.Helper()
	fx := newFixture(tb)
	chain := filepath.Join(fx.root, "chain")
	if err := os.MkdirAll(chain, 0o755); err != nil {
		tb.Fatal(err)
	}
	// A sibling whose name starts with the project's.
	if err := os.Symlink(filepath.Join(fx.home, ".ssh"), fx.proj+"-keys"); err != nil {
		tb.Fatal(err)
	}
	for i := range 45 {
		target := fmt.Sprintf("l%d", i+1)
		if i == 44 {
			target = fx.proj
		}
		if err := os.Symlink(target, filepath.Join(chain, fmt.Sprintf("l%d", i))); err != nil {
			tb.Fatal(err)
		}
	}
	cwds := []string{fx.proj, fx.proj + "/", fx.root, "/", fx.proj + "/link-ssh", fx.proj + "/up/proj", fx.proj + "/link-other",
		fx.proj + "/loop1", fx.proj + "/self/x", fx.proj + "/missing/deeper", fx.proj + "/main.go", fx.proj + "/chain1",
		fx.proj + "/./sub/../sub", chain + "/l5", chain + "/l30", chain + "/l3/sub", fx.proj + "/sub/back", "relative/dir", ""}
	raws := []string{"main.go", "sub/a.txt", "../proj/main.go", "..", "../..", "../../..", ".", "", "a//b", "./main.go/",
		"link-ssh/id_rsa", "link-ssh/../../policy.yaml", "up/up/proj/.env", "loop1/x", "self", "innocent.txt",
		"chain1", "chain2/..", "sub/back", "sub/back/..", "missing/../main.go", "missing/../../other", "link-other/notes.txt",
		"link-key", "-keys/id_rsa", "../proj-keys/id_rsa", "../chain/l0", "../chain/l20/main.go", "../chain/l39/sub", "../../chain/l1/link-ssh"}
	return fx, cwds, raws
}

// TestResolvedDirSameAsWalk is the differential test of resolving paths
// under a working directory resolved once: for every working directory
// and path of the fixture (links absolute and relative, chains, loops,
// "..", missing components, a file as a directory, the limit on links),
// resolvedDir.resolve gives exactly what walking the whole path from "/"
// gives, the same place or the same error.
func TestResolvedDirSameAsWalk(t *testing.T) {
	fx, cwds, raws := dirFixture(t)
	shortcuts := 0
	for _, cwd := range cwds {
		wd := resolveDir(cwd)
		for _, raw := range raws {
			// Under the directory, as Absolute makes a relative path, and
			// elsewhere: next to it with a name it begins, absolute.
			for _, abs := range []string{cwd + "/" + raw, cwd + "-keys/" + raw, cwd + raw, fx.proj + "/" + raw, "/" + raw} {
				got, gerr := wd.resolve(abs)
				want, werr := resolveAbs(abs)
				if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
					t.Errorf("cwd %q, path %q: %q, %v; walking it whole: %q, %v", cwd, abs, got, gerr, want, werr)
				}
			}
			if wd.ok {
				shortcuts++
			}
		}
		if wd.ok {
			if r, err := resolveAbs(cwd); err != nil || r != wd.dest {
				t.Errorf("cwd %q resolved to %q, resolveAbs says %q, %v", cwd, wd.dest, r, err)
			}
		}
	}
	if shortcuts < len(raws)*8 {
		t.Errorf("only %d resolutions took the shortcut", shortcuts)
	}
}

// FuzzResolvedDirSameAsWalk checks the same for paths the fuzzer makes.
func FuzzResolvedDirSameAsWalk(f *testing.F) {
	fx, cwds, raws := dirFixture(f)
	for i, raw := range raws {
		f.Add(uint8(i), raw)
	}
	f.Fuzz(func(t *testing.T, i uint8, raw string) {
		cwd := cwds[int(i)%len(cwds)]
		abs := cwd + "/" + fx.expand(raw)
		if i >= 128 {
			abs = fx.expand(raw) // anywhere
		}
		got, gerr := resolveDir(cwd).resolve(abs)
		want, werr := resolveAbs(abs)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("cwd %q, path %q: %q, %v; walking it whole: %q, %v", cwd, raw, got, gerr, want, werr)
		}
	})
}
