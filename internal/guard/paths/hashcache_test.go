package paths

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/guard"
)

// hashVia hashes p through c as the kernel's read recording does: stat,
// then the cache; the hash must be the file's.
func hashVia(t *testing.T, c *HashCache, p string) string {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	h, mt, err := c.Hash(p, fi)
	if err != nil {
		t.Fatal(err)
	}
	if !mt.Equal(fi.ModTime()) {
		t.Fatalf("mtime %v, stat says %v", mt, fi.ModTime())
	}
	want, _, err := HashFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if h != want {
		t.Fatalf("cached hash %s, the file's is %s", h, want)
	}
	return h
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A cached hash is never returned for content that changed: not for a
// write of the same size in the same clock tick as the hash (the entry is
// not kept while the file's change is recent), not for a write whose
// modification time was set back, and not for a file replaced by another
// of the same size and times. hashVia checks every answer against the
// file's content.
func TestHashCacheFollowsChanges(t *testing.T) {
	dir := t.TempDir()
	p, r, q := filepath.Join(dir, "p.txt"), filepath.Join(dir, "r.txt"), filepath.Join(dir, "q.txt")
	write(t, p, "one\n")
	write(t, r, "red\n")
	write(t, q, "ten\n")
	c := NewHashCache()
	hashVia(t, c, p)
	if runtime.GOOS == "linux" && len(c.m) != 0 {
		t.Fatal("a file changed within the racy window was remembered")
	}
	write(t, p, "two\n") // same size, at once
	hashVia(t, c, p)

	time.Sleep(guard.RacyWindow + 100*time.Millisecond)
	h := hashVia(t, c, p)
	hashVia(t, c, r)
	if runtime.GOOS != "linux" {
		return // nothing is remembered there
	}
	if len(c.m) != 2 {
		t.Fatalf("%d hashes of old files remembered, want 2", len(c.m))
	}
	if hashVia(t, c, p) != h {
		t.Fatal("the hash of an unchanged file changed")
	}
	// Same size, modification time set back: the change time moved.
	fi, _ := os.Stat(p)
	write(t, p, "six\n")
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if hashVia(t, c, p) == h {
		t.Fatal("a rewritten file kept its old hash")
	}
	// Replaced (renamed over) by a file of the same size and times.
	fi, _ = os.Stat(r)
	hr := hashVia(t, c, r)
	if err := os.Chtimes(q, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(q, r); err != nil {
		t.Fatal(err)
	}
	if hashVia(t, c, r) == hr {
		t.Fatal("a replaced file kept the old file's hash")
	}
}

// A nil cache hashes every time; what is not a regular file is not hashed.
func TestHashCacheNotRegular(t *testing.T) {
	var c *HashCache
	p := filepath.Join(t.TempDir(), "f")
	write(t, p, "x")
	hashVia(t, c, p)
	if runtime.GOOS != "linux" {
		return
	}
	if _, _, err := hashFileID(t.TempDir()); err == nil {
		t.Fatal("a directory was hashed")
	}
}
