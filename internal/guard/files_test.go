//go:build unix

package guard_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/guard/paths"
)

// TestOpenRegularNamedPipe: a named pipe is refused at once (opening it
// for reading would wait for a writer); a regular file opens. The read-
// before-edit hash, which every recorded read of the agent's paths takes,
// refuses it the same way.
func TestOpenRegularNamedPipe(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	reg := filepath.Join(dir, "file")
	if err := os.WriteFile(reg, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() {
		_, err := guard.OpenRegular(fifo)
		done <- err
		_, _, err = paths.HashFile(fifo)
		done <- err
	}()
	for i := 0; i < 2; i++ {
		select {
		case err := <-done:
			if !errors.Is(err, guard.ErrNotRegular) {
				t.Fatalf("named pipe: %v, want ErrNotRegular", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a named pipe still holds the open after 10s")
		}
	}
	f, err := guard.OpenRegular(reg)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, _, err := paths.HashFile(reg); err != nil {
		t.Fatal(err)
	}
}
