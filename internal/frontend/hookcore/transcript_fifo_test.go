//go:build unix

package hookcore

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The lean hook reads the session's transcript before it asks the daemon;
// a named pipe the agent put at the transcript's path is not waited on (an
// open for reading of a pipe waits for a writer): it reports nothing, as
// a transcript that cannot be read. The full hook's twin with a regular
// transcript is TestHookTranscriptNamedPipe (internal/frontend/cli).
func TestLeanTranscriptNamedPipe(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "session.jsonl")
	if err := syscall.Mkfifo(tr, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ev := &Event{Agent: ClaudeCode, SessionID: "s", TranscriptPath: tr}
	done := make(chan error, 1)
	go func() { done <- (&Lean{}).reportUsage(context.Background(), nil, ev) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		if f, err := os.OpenFile(tr, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("the lean hook waited on the named pipe at the transcript's path")
	}
	if _, err := OpenTranscript(tr); err == nil {
		t.Fatal("a named pipe opened as a transcript")
	}
	reg := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(reg, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenTranscript(reg)
	if err != nil {
		t.Fatalf("a regular transcript: %v", err)
	}
	f.Close()
}
