//go:build unix

package undo

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestNamedPipeNotRead: a named pipe where undo reads a file (a kept file
// swapped for one after Lstat, a diff against today's file) is refused at
// once instead of holding the keep or the preview until a writer comes;
// the regular file twin is read.
func TestNamedPipeNotRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	reg := filepath.Join(dir, "file")
	if err := os.WriteFile(reg, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := readCapped(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("readCapped of a named pipe: no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("readCapped of a named pipe still waits after 10s")
	}
	b, ok, err := readCapped(reg)
	if err != nil || !ok || string(b) != "kept" {
		t.Fatalf("readCapped of a regular file: %q %v %v", b, ok, err)
	}
}
