package paths

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// hashVia hashes p through c as the kernel's read recording does: stat,
// then the cache.
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

// A cached hash is never returned for content that changed: not for a
// write of the same size in the same clock tick as the hash (the entry is
// not kept while the file's change is recent), not for a write whose
// modification time was set back, and not for a file replaced by another
// with the same size and times.
func TestHashCacheFollowsChanges(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(p, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := NewHashCache()
	hashVia(t, c, p)
	if runtime.GOOS == "linux" && len(c.m) != 0 {
		t.Fatal("a file changed within the racy window was remembered")
	}
	// Same size, at once: still hashed anew.
	if err := os.WriteFile(p, []byte("two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hashVia(t, c, p)

	time.Sleep(racyWindow + 100*time.Millisecond)
	h2 := hashVia(t, c, p)
	if runtime.GOOS != "linux" {
		return // nothing is remembered there
	}
	if len(c.m) != 1 {
		t.Fatal("an old file's hash was not remembered")
	}
	if hashVia(t, c, p) != h2 {
		t.Fatal("the hash of an unchanged file changed")
	}
	// Same size, modification time set back: the change time moved.
	fi, _ := os.Stat(p)
	if err := os.WriteFile(p, []byte("six\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if hashVia(t, c, p) == h2 {
		t.Fatal("a rewritten file kept its old hash")
	}
	// Replaced (rename over it) by a file of the same size and times.
	time.Sleep(racyWindow + 100*time.Millisecond)
	h3 := hashVia(t, c, p)
	fi, _ = os.Stat(p)
	q := filepath.Join(dir, "g.txt")
	if err := os.WriteFile(q, []byte("ten\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(q, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(q, p); err != nil {
		t.Fatal(err)
	}
	if hashVia(t, c, p) == h3 {
		t.Fatal("a replaced file kept the old file's hash")
	}
}

// A nil cache hashes every time; what is not a regular file is not hashed.
func TestHashCacheNotRegular(t *testing.T) {
	var c *HashCache
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	hashVia(t, c, p)
	if runtime.GOOS != "linux" {
		return
	}
	if _, _, err := hashFileID(t.TempDir()); err == nil {
		t.Fatal("a directory was hashed")
	}
}
