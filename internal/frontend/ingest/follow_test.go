package ingest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// Follow picks up a transcript in a directory created after it started,
// reads a line only once its newline is written, and reports nothing for
// the half-written line meanwhile.
func TestFollow(t *testing.T) {
	k, err := kernel.Open(context.Background(), kernel.Config{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	root := t.TempDir()
	var mu sync.Mutex
	var problems []Problem
	in := &Ingester{K: k, OnProblem: func(_ context.Context, p Problem) { mu.Lock(); problems = append(problems, p); mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Follow(ctx, []string{root}, 200*time.Millisecond, nil) }()
	defer func() { cancel(); <-done }()

	count := func() int {
		recs, err := k.Store.QueryAudit(context.Background(), store.AuditQuery{Types: []string{audit.TypeIngested}})
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for count() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d ingested records, want %d", count(), n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(100 * time.Millisecond) // the watcher is set up
	dir := filepath.Join(root, "new-project")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "run.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(`{"agent":"bot","session":"s","id":"1","tool":"bash","args":{"command":"ls"}}` + "\n")
	waitFor(1)
	f.WriteString(`{"agent":"bot","session":"s","id":"2","tool":"bash",`)
	time.Sleep(600 * time.Millisecond) // rescans see the half line
	if n := count(); n != 1 {
		t.Fatalf("a half-written line was ingested (%d records)", n)
	}
	f.WriteString(`"args":{"command":"pwd"}}` + "\n")
	waitFor(2)
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
}
