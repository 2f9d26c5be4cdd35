//go:build unix

package ingest

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// A named pipe an agent makes among the transcripts Follow watches (its
// user can write there) is not opened for reading, which would wait for a
// writer while holding the ingester: the transcripts written after it are
// still read. The twin: the same transcript without the pipe (TestFollow).
func TestFollowNamedPipe(t *testing.T) {
	k, err := kernel.Open(context.Background(), kernel.Config{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	root := t.TempDir()
	in := &Ingester{K: k, OnProblem: func(context.Context, Problem) {}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Follow(ctx, []string{root}, 200*time.Millisecond, nil) }()
	pipe := filepath.Join(root, "stall.jsonl")
	defer func() {
		// Let a held open go (a writer comes and goes), then stop.
		if f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		cancel()
		<-done
	}()
	time.Sleep(100 * time.Millisecond) // the watcher is set up
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // the watcher sees the pipe
	line := `{"agent":"bot","session":"s","id":"1","tool":"bash","args":{"command":"ls"}}` + "\n"
	if err := os.WriteFile(filepath.Join(root, "run.jsonl"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, err := k.Store.QueryAudit(context.Background(), store.AuditQuery{Types: []string{audit.TypeIngested}})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ingested records, want 1: a named pipe among the transcripts held the ingester", len(recs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
