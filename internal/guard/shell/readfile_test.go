//go:build unix

package shell

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// TestNamedPipeDoesNotBlock: the guard reads the files a command runs or
// applies (a program's build information, a script, a patch); a named pipe
// put where one is expected used to hold the judgement until a writer came
// (`./runme` hung `overseer eval`). Each command is judged at once, and the
// regular file of the same name twin is still read (a patch's targets).
func TestNamedPipeDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"runme", "fix.patch", "setup.sh"} {
		if err := syscall.Mkfifo(filepath.Join(dir, n), 0o644); err != nil {
			t.Skipf("no named pipes here: %v", err)
		}
	}
	env := Env{Cwd: dir, Home: t.TempDir()}
	for _, c := range []string{"./runme", "./runme --flag", "git apply fix.patch", "patch -p1 -i fix.patch", "bash setup.sh", ". ./setup.sh", "source setup.sh"} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			Analyze(c, env)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the judgement still waits on the named pipe after 10s", c)
		}
	}
	// The twin: a regular patch file is read, and its target is a write.
	twin := t.TempDir()
	patch := "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-a\n+b\n"
	if err := os.WriteFile(filepath.Join(twin, "fix.patch"), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Analyze("git apply fix.patch", Env{Cwd: twin, Home: t.TempDir()})
	found := false
	for _, p := range r.Paths {
		if filepath.Base(p.Path) == "notes.txt" && p.Intent == action.PathWrite {
			found = true
		}
	}
	if !found {
		t.Fatalf("git apply of a regular patch file: its target notes.txt is not written: %+v", r.Paths)
	}
}
