//go:build unix

package builtin

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A named pipe at the path an agent asks Overseer's file tools to read is
// refused at once, not waited on for a writer (which held the tool, and
// the agent's call, until one came); a regular file (the twin) is read.
func TestLoadFileNamedPipe(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "p")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := loadFile(pipe); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a named pipe was read as a file")
		}
	case <-time.After(10 * time.Second):
		if f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("reading a named pipe waited for a writer")
	}
	reg := filepath.Join(dir, "r")
	if err := os.WriteFile(reg, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _, err := loadFile(reg); err != nil || string(b) != "x" {
		t.Fatalf("a regular file: %q %v", b, err)
	}
}
