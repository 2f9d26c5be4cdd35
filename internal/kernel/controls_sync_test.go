package kernel_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// slowQueries counts the audit queries of the controls' sync, and holds
// each (after it has read) until hold is closed.
type slowQueries struct {
	store.Store
	n    atomic.Int64
	hold chan struct{}
}

func (s *slowQueries) QueryAudit(ctx context.Context, q store.AuditQuery) ([]store.AuditRecord, error) {
	recs, err := s.Store.QueryAudit(ctx, q)
	s.n.Add(1)
	<-s.hold
	return recs, err
}

// Concurrent syncs share reads of the trail: those that wait while one
// runs are served by the next, which started after them.
func TestControlsSyncShared(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	sq := &slowQueries{Store: e.k.Store, hold: make(chan struct{})}
	e.k.Store = sq
	var wg sync.WaitGroup
	first := make(chan error, 1)
	go func() { first <- e.k.SyncControls(ctx) }()
	for sq.n.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// 32 calls while the first read is held: one more read serves them.
	var ready sync.WaitGroup
	for range 32 {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			if err := e.k.SyncControls(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	ready.Wait()
	time.Sleep(20 * time.Millisecond) // let them queue
	close(sq.hold)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// Two: the held read, and one for all the calls that queued behind
	// it. On a loaded machine a call may first run after that second
	// read started, and wait for a third; without the sharing there
	// would be 33.
	if n := sq.n.Load(); n < 2 || n > 3 {
		t.Fatalf("%d reads of the trail for 33 concurrent syncs, want 2 (3 at most on a loaded machine)", n)
	}
}

// A sync called after another process changed the rules is not served by
// a read that started before the change: it loads the change.
func TestControlsSyncAfterChangeReadsAgain(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	k2, err := kernel.Open(ctx, kernel.Config{Home: e.home, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	sq := &slowQueries{Store: e.k.Store, hold: make(chan struct{})}
	e.k.Store = sq
	first := make(chan error, 1)
	go func() { first <- e.k.SyncControls(ctx) }()
	for sq.n.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// The first read is done (and held): the change comes after it.
	if _, err := k2.PutAutoRule(ctx, autorule.Rule{Name: "reads", Enabled: true, Priority: 1,
		Trigger: autorule.Trigger{Type: autorule.TriggerCount, Tool: "file_read", Count: 2, WindowMinutes: 5},
		Action:  autorule.Action{Type: autorule.ActBlockTool, DurationMinutes: 30}}, "alice"); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() { second <- e.k.SyncControls(ctx) }()
	time.Sleep(20 * time.Millisecond)
	close(sq.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if n := sq.n.Load(); n < 2 {
		t.Fatalf("the sync called after the change read the trail %d times in all, want a read of its own", n)
	}
	if rs := mustList(t, e.k); len(rs) != 1 {
		t.Fatalf("%d rules listed", len(rs))
	}
}

// countedQueries counts the audit queries of the controls' sync, and
// tells others' commits apart as the store under it does.
type countedQueries struct {
	store.Store
	n atomic.Int64
}

func (s *countedQueries) QueryAudit(ctx context.Context, q store.AuditQuery) ([]store.AuditRecord, error) {
	s.n.Add(1)
	return s.Store.QueryAudit(ctx, q)
}

func (s *countedQueries) OthersVersion(ctx context.Context) (int64, error) {
	return s.Store.(interface {
		OthersVersion(context.Context) (int64, error)
	}).OthersVersion(ctx)
}

// Without rules, the sync before each call reads the trail only when
// another process wrote to the database since it last did: this process's
// own calls cost no query, and a rule another process adds is in force at
// the next call.
func TestControlsSyncReadsOnlyAfterOthersWrote(t *testing.T) {
	ctx := context.Background()
	e := newControlsEnv(t, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	cq := &countedQueries{Store: e.k.Store}
	e.k.Store = cq
	if err := e.k.SyncControls(ctx); err != nil {
		t.Fatal(err)
	}
	base := cq.n.Load()
	p := filepath.Join(e.proj, "r.txt")
	e.write(t, p, "r")
	n := 0
	read := func() action.Level {
		t.Helper()
		n++ // one session each: no repeat of a call
		sub, err := e.k.Submit(ctx, &action.Action{Agent: "a", Session: fmt.Sprint("s", n), Tool: "Read", Args: map[string]any{"file_path": p}, Cwd: e.proj})
		if err != nil {
			t.Fatal(err)
		}
		return sub.Verdict.Level
	}
	for range 2 {
		if l := read(); l == action.Block {
			t.Fatal("a read blocked without rules")
		}
	}
	for range 5 {
		if err := e.k.SyncControls(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := cq.n.Load() - base; n != 0 {
		t.Fatalf("%d reads of the trail with no other process writing, want 0", n)
	}
	k2, err := kernel.Open(ctx, kernel.Config{Home: e.home, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	if _, err := k2.PutAutoRule(ctx, autorule.Rule{Name: "two reads", Enabled: true, Priority: 1,
		Trigger: autorule.Trigger{Type: autorule.TriggerCount, Tool: "file_read", Count: 2, WindowMinutes: 5},
		Action:  autorule.Action{Type: autorule.ActBlockTool, DurationMinutes: 30}}, "alice"); err != nil {
		t.Fatal(err)
	}
	// In force: within its count of reads, one is blocked.
	blocked := false
	for range 3 {
		blocked = blocked || read() == action.Block
	}
	if !blocked {
		t.Fatal("three reads after another process added the rule, none blocked")
	}
	if cq.n.Load() == base {
		t.Fatal("the rule was loaded without a read of the trail")
	}
}
