package gitread

import (
	"bytes"
	"compress/zlib"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// git runs the real git in dir, with no configuration of the person's.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// testRepo makes a repository with history, a branch, a tag, a stash and
// (when packed) everything in a pack with deltas.
func testRepo(t *testing.T, packed bool) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	w := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	big := strings.Repeat("line of text that repeats for deltas\n", 200)
	w(".claude/settings.json", `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"overseer hook claude-code"}]}]}}`)
	w("big.txt", big)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "one")
	git(t, dir, "tag", "-a", "v1", "-m", "v1")
	w("big.txt", big+"one more\n")
	git(t, dir, "commit", "-q", "-am", "two")
	git(t, dir, "checkout", "-q", "-b", "other")
	w(".claude/settings.json", `{}`)
	git(t, dir, "commit", "-q", "-am", "no hooks")
	git(t, dir, "checkout", "-q", "main")
	w(".claude/settings.json", `{"disableAllHooks":true}`)
	git(t, dir, "stash", "-q")
	if packed {
		git(t, dir, "gc", "-q", "--aggressive")
	}
	return dir
}

func TestReadsWhatGitReads(t *testing.T) {
	for _, packed := range []bool{false, true} {
		dir := testRepo(t, packed)
		r, err := Open(nil, filepath.Join(dir, ".git"))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for _, rev := range []string{"HEAD", "main", "other", "v1", "HEAD~1", "HEAD^", "other~2", "stash@{0}", "stash", "stash^1", "refs/heads/other"} {
			want := git(t, dir, "rev-parse", rev+"^{commit}")
			got, err := r.Resolve(rev)
			if err != nil || got != want {
				t.Errorf("packed=%v: Resolve(%q) = %q, %v; want %q", packed, rev, got, err, want)
			}
		}
		short := git(t, dir, "rev-parse", "--short=7", "other")
		if got, err := r.Resolve(short); err != nil || got != git(t, dir, "rev-parse", "other") {
			t.Errorf("packed=%v: Resolve(%q) = %q, %v", packed, short, got, err)
		}
		for _, c := range []struct{ rev, file string }{{"main", "big.txt"}, {"v1", "big.txt"}, {"other", ".claude/settings.json"},
			{"main", ".claude/settings.json"}, {"stash@{0}", ".claude/settings.json"}} {
			h, err := r.Resolve(c.rev)
			if err != nil {
				t.Fatal(err)
			}
			e, ok, err := r.Lookup(h, c.file)
			if err != nil || !ok {
				t.Fatalf("packed=%v: Lookup(%s:%s) = %v, %v", packed, c.rev, c.file, ok, err)
			}
			b, err := r.Blob(e.Hash)
			if want := git(t, dir, "show", c.rev+":"+c.file); err != nil || strings.TrimSpace(string(b)) != want {
				t.Errorf("packed=%v: %s:%s = %q, %v; want %q", packed, c.rev, c.file, b, err, want)
			}
		}
		if _, ok, err := r.Lookup("HEAD", "nope/x"); err == nil && ok {
			t.Error("found a missing path")
		}
		mb, err := r.MergeBase(mustResolve(t, r, "other"), mustResolve(t, r, "main"))
		if want := git(t, dir, "merge-base", "other", "main"); err != nil || mb != want {
			t.Errorf("MergeBase = %q, %v; want %q", mb, err, want)
		}
		if _, err := r.Resolve("main@{yesterday}"); err == nil {
			t.Error("a reflog date form resolved")
		}
		if _, err := r.Resolve("nosuchbranch"); err == nil {
			t.Error("a missing branch resolved")
		}
	}
}

func mustResolve(t *testing.T, r *Repo, rev string) string {
	t.Helper()
	h, err := r.Resolve(rev)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestNamedPipeObject: a named pipe where an object should be is not read
// (it would hold the reading until a writer came).
func TestNamedPipeObject(t *testing.T) {
	dir := testRepo(t, false)
	h := git(t, dir, "rev-parse", "HEAD")
	p := filepath.Join(dir, ".git", "objects", h[:2], h[2:])
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(p); err != nil {
		t.Skip(err)
	}
	r, err := Open(nil, filepath.Join(dir, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(h); err == nil {
		t.Fatal("read a commit from a named pipe")
	}
}

func TestBounds(t *testing.T) {
	// An object larger than the bound is refused, not read.
	var buf bytes.Buffer
	z := zlib.NewWriter(&buf)
	z.Write([]byte("blob 99999999\x00"))
	z.Close()
	if _, err := readLoose(&buf); err == nil {
		t.Fatal("read an object past the bound")
	}
	// A delta that copies past its base is refused.
	if _, err := ApplyDelta([]byte("abc"), []byte{3, 10, 0x91, 0, 10}); err == nil {
		t.Fatal("applied a copy out of range")
	}
}

func FuzzParsers(f *testing.F) {
	f.Add([]byte("100644 a\x00aaaaaaaaaaaaaaaaaaaa"), []byte("abc"), []byte{3, 3, 0x91, 0, 3})
	f.Add([]byte("40000 d\x00bbbbbbbbbbbbbbbbbbbb"), []byte(""), []byte{0, 2, 2, 'h', 'i'})
	f.Fuzz(func(t *testing.T, tree, base, delta []byte) {
		_, _ = ParseTree(tree)
		if out, err := ApplyDelta(base, delta); err == nil && len(out) > MaxObjectBytes {
			t.Fatal("delta past the bound")
		}
		_, _ = readLoose(bytes.NewReader(tree))
		_, _, _ = checkIdx(delta, int64(len(delta)))
	})
}

// FuzzPack reads objects from a pack and its index of any content: an
// error, never a panic or a read past the bounds.
func FuzzPack(f *testing.F) {
	dir := testRepoForFuzz(f)
	if dir != "" {
		idx, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
		if len(idx) == 1 {
			ib, _ := os.ReadFile(idx[0])
			pb, _ := os.ReadFile(strings.TrimSuffix(idx[0], ".idx") + ".pack")
			f.Add(ib, pb, uint16(0))
		}
	}
	f.Fuzz(func(t *testing.T, idx, pk []byte, which uint16) {
		fsys := fstest.MapFS{
			"r/.git/HEAD":                  {Data: []byte("ref: refs/heads/main\n")},
			"r/.git/objects/pack/p.idx":    {Data: idx},
			"r/.git/objects/pack/p.pack":   {Data: pk},
			"r/.git/refs/heads/.keep":      {Data: nil},
			"r/.git/objects/info/.keep":    {Data: nil},
			"r/.git/objects/00/.keep":      {Data: nil},
			"r/.git/packed-refs":           {Data: nil},
			"r/.git/objects/pack/.keep":    {Data: nil},
			"r/.git/objects/info/packs":    {Data: nil},
			"r/.git/refs/tags/.keep":       {Data: nil},
			"r/.git/logs/HEAD":             {Data: nil},
			"r/.git/config":                {Data: []byte("[core]\n")},
			"r/.git/description":           {Data: nil},
			"r/.git/info/exclude":          {Data: nil},
			"r/.git/hooks/.keep":           {Data: nil},
			"r/.git/objects/pack/p.rev":    {Data: nil},
			"r/.git/objects/pack/p.keep":   {Data: nil},
			"r/.git/objects/pack/p.bitmap": {Data: nil},
		}
		r, err := Open(fsys, "/r/.git")
		if err != nil {
			return
		}
		defer r.Close()
		if err := r.loadPacks(); err != nil || len(r.packs) == 0 {
			return
		}
		p := r.packs[0]
		if err := p.open(fsys); err != nil {
			return
		}
		if p.n == 0 {
			return
		}
		hb, err := p.hashAt(int(which) % p.n)
		if err != nil {
			return
		}
		h := hex.EncodeToString(hb)
		if o, err := r.Object(h); err == nil && len(o.data) > MaxObjectBytes {
			t.Fatal("an object past the bound")
		}
		_, _ = r.abbrev(h[:6])
	})
}

// testRepoForFuzz makes a packed repository for the fuzz corpus, or "".
func testRepoForFuzz(f *testing.F) string {
	if _, err := exec.LookPath("git"); err != nil {
		return ""
	}
	dir := f.TempDir()
	git(f, dir, "init", "-q", "-b", "main")
	for i := 0; i < 3; i++ {
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte(strings.Repeat("text\n", 50+i)), 0o644); err != nil {
			f.Fatal(err)
		}
		git(f, dir, "add", "-A")
		git(f, dir, "commit", "-q", "-m", "c")
	}
	git(f, dir, "gc", "-q", "--aggressive")
	return dir
}

// TestMergeBaseLongHistory: a branch a few commits ahead of a long history
// is found in a few steps, not after walking the history (which would
// reach the bound and make every git pull in a real project unknown).
func TestMergeBaseLongHistory(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	var b strings.Builder
	for i := 0; i < 6000; i++ {
		fmt.Fprintf(&b, "commit refs/heads/main\nmark :%d\ncommitter a <a@x> %d +0000\ndata 0\n", i+1, 1000+i)
		if i > 0 {
			fmt.Fprintf(&b, "from :%d\n", i)
		}
		b.WriteString("\n")
	}
	for i := 0; i < 3; i++ {
		fmt.Fprintf(&b, "commit refs/heads/ahead\nmark :%d\ncommitter a <a@x> %d +0000\ndata 0\nfrom :%d\n\n", 7000+i, 9000+i, map[bool]int{true: 6000, false: 7000 + i - 1}[i == 0])
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v %s", err, out)
	}
	git(t, dir, "gc", "-q")
	r, err := Open(nil, filepath.Join(dir, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// What is tested is the number of objects read (MaxObjects would stop
	// a walk of the history), not the time: a loaded machine may take
	// longer than Budget for main~1000.
	r.deadline = time.Now().Add(time.Minute)
	mb, err := r.MergeBase(mustResolve(t, r, "main"), mustResolve(t, r, "ahead"))
	if want := git(t, dir, "rev-parse", "main"); err != nil || mb != want {
		t.Fatalf("MergeBase = %q, %v; want %q", mb, err, want)
	}
	if _, err := r.Resolve("main~1000"); err != nil {
		t.Fatalf("main~1000: %v", err)
	}
}
