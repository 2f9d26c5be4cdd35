package audit_test

import (
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
)

// lazyAppend appends one lazy result record in the background.
func lazyAppend(l *audit.Log, t *testing.T, id string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := l.AppendLazy(t.Context(), audit.Entry{Type: audit.TypeResult, ActionID: id})
		done <- err
	}()
	return done
}

// countRecords is how many audit records the store holds.
func countRecords(t *testing.T, g *gatedSync) int {
	t.Helper()
	recs, err := g.QueryAudit(t.Context(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// waitHeld waits until n lazy requests wait in l's writer.
func waitHeld(t *testing.T, l *audit.Log, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for audit.Held(l) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d lazy requests held, want %d", audit.Held(l), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A lazy record waits for the next durable append and shares its commit
// and its sync; both are answered once that sync returns.
func TestAppendLazyRidesWithTheNextDurableAppend(t *testing.T) {
	db, _ := openDB(t)
	g := &gatedSync{DB: db, release: make(chan error)}
	l := audit.New(g, clock.NewFake(t0))
	defer closeGated(l, g)
	audit.SetLazyWait(l, time.Minute) // however slow the machine, the durable append comes first
	lazy := lazyAppend(l, t, "a1")
	waitHeld(t, l, 1)
	if n := countRecords(t, g); n != 0 {
		t.Fatalf("%d records committed while the lazy one waits for company", n)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.AppendAll(t.Context(), audit.Entry{Type: audit.TypeAction, ActionID: "a2"}, audit.Entry{Type: audit.TypeVerdict, ActionID: "a2"})
		done <- err
	}()
	waitRecords(t, db, 3)
	select {
	case err := <-lazy:
		t.Fatalf("the lazy append answered before its batch was synced (err %v)", err)
	case err := <-done:
		t.Fatalf("the durable append answered before its batch was synced (err %v)", err)
	case <-time.After(20 * time.Millisecond):
	}
	g.release <- nil
	if err := <-lazy; err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s, b := g.syncs.Load(), g.batches.Load(); s != 1 || b != 1 {
		t.Fatalf("%d syncs for %d batches, want one of each", s, b)
	}
	recs, err := db.QueryAudit(t.Context(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].ActionID != "a1" || recs[0].Type != audit.TypeResult {
		t.Fatalf("first record %+v, want the lazy one, which came first", recs[0])
	}
}

// A lazy record with no durable append to join is written alone after
// LazyWait.
func TestAppendLazyWrittenAloneAfterWaiting(t *testing.T) {
	db, _ := openDB(t)
	g := &gatedSync{DB: db, release: make(chan error, 1)}
	l := audit.New(g, clock.NewFake(t0))
	defer closeGated(l, g)
	start := time.Now()
	g.release <- nil
	if err := <-lazyAppend(l, t, "a1"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < audit.LazyWait/2 {
		t.Fatalf("written after %v, before waiting for company", d)
	}
	if n, s := countRecords(t, g), g.syncs.Load(); n != 1 || s != 1 {
		t.Fatalf("%d records, %d syncs", n, s)
	}
}

// Close writes the lazy records still waiting.
func TestCloseWritesLazy(t *testing.T) {
	db, _ := openDB(t)
	g := &gatedSync{DB: db, release: make(chan error, 1)}
	l := audit.New(g, clock.NewFake(t0))
	audit.SetLazyWait(l, time.Minute) // Close comes first
	lazy := lazyAppend(l, t, "a1")
	waitHeld(t, l, 1)
	g.release <- nil
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-lazy; err != nil {
		t.Fatal(err)
	}
	if n := countRecords(t, g); n != 1 {
		t.Fatalf("%d records after Close, want 1", n)
	}
}
