//go:build linux

package guard

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file's stamp changes with every write, even one that keeps its size
// and puts its modification time back (the change time moves); a stamp
// taken right after a change has not settled. Directories and a missing
// stat have none.
func TestStamp(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	old := time.Now().Add(-time.Hour)
	write := func(s string) Stamp {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st, ok := StampOf(fi)
		if !ok {
			t.Fatal("no stamp for a regular file")
		}
		return st
	}
	a := write("one")
	time.Sleep(20 * time.Millisecond) // past the file clock's tick
	b := write("two")
	if a == b {
		t.Fatalf("a rewrite with the old size and time kept the stamp: %+v", a)
	}
	if b.Mtime != old.UnixNano() || b.Size != 3 {
		t.Fatalf("stamp %+v", b)
	}
	if b.Settled(time.Now()) {
		t.Fatal("a file changed just now has settled")
	}
	if !b.Settled(time.Now().Add(RacyWindow + time.Second)) {
		t.Fatal("a file unchanged for longer than the racy window has not settled")
	}
	di, err := os.Stat(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := StampOf(di); ok {
		t.Fatal("a directory has a stamp")
	}
	if _, ok := StampOf(nil); ok {
		t.Fatal("no stat has a stamp")
	}
}
