package smallfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 511, 512, 513, 4096, 100_000} {
		want := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Read(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("size %d: got %d bytes, %v", size, len(got), err)
		}
	}
	// /proc files report a size of 0 and are read to their end.
	if b, err := Read("/proc/self/stat"); err == nil && len(b) == 0 {
		t.Error("read nothing of /proc/self/stat")
	}
	_, err := Read(filepath.Join(dir, "missing"))
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "open" {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := Read(dir); err == nil {
		t.Error("read a directory")
	}
}
