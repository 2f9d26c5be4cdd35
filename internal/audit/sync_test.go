package audit_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

// gatedSync is a real SQLite store whose deferred syncs (the sync of a
// committed audit batch, store.AuditBatch.DeferSync) wait for the test:
// each waits for a value on release, and fails with it when it is not nil.
type gatedSync struct {
	*sqlite.DB
	release chan error
	syncs   atomic.Int64
	batches atomic.Int64
}

func (g *gatedSync) AppendAuditBatch(ctx context.Context, b *store.AuditBatch) error {
	err := g.DB.AppendAuditBatch(ctx, b)
	if err == nil && b.Sync != nil {
		g.batches.Add(1)
		inner := b.Sync
		b.Sync = func() error {
			if err := <-g.release; err != nil {
				return err
			}
			g.syncs.Add(1)
			return inner()
		}
	}
	return err
}

// An append is answered only once its batch is synced: committed (another
// reader sees it) is not enough. The writer commits later batches while
// the sync waits, and one sync answers them all.
func TestAppendWaitsForSync(t *testing.T) {
	db, _ := openDB(t)
	g := &gatedSync{DB: db, release: make(chan error)}
	l := audit.New(g, clock.NewFake(t0))
	defer closeGated(l, g)
	ctx := t.Context()

	done := make(chan error, 1)
	go func() {
		_, err := l.Append(ctx, audit.Entry{Type: audit.TypeAction, ActionID: "a1"})
		done <- err
	}()
	waitRecords(t, db, 1)
	select {
	case err := <-done:
		t.Fatalf("append answered before its batch was synced (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	// While the first sync waits, the writer commits a second batch.
	done2 := make(chan error, 1)
	go func() {
		_, err := l.Append(ctx, audit.Entry{Type: audit.TypeVerdict, ActionID: "a1"})
		done2 <- err
	}()
	waitRecords(t, db, 2)
	g.release <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The second batch's sync: it may share the first's or have its own.
	select {
	case err := <-done2:
		if err != nil {
			t.Fatal(err)
		}
	case g.release <- nil:
		if err := <-done2; err != nil {
			t.Fatal(err)
		}
	}
	if n, b := g.syncs.Load(), g.batches.Load(); n < 1 || n > b || b != 2 {
		t.Fatalf("%d syncs for %d deferred batches", n, b)
	}
}

// A failed sync fails the appends it was to make durable, and every later
// one (fail closed: a later sync could succeed without the lost pages).
func TestSyncFailureFailsLaterAppends(t *testing.T) {
	db, _ := openDB(t)
	g := &gatedSync{DB: db, release: make(chan error, 10)}
	l := audit.New(g, clock.NewFake(t0))
	defer l.Close()
	ctx := t.Context()
	boom := errors.New("EIO")
	g.release <- boom
	if _, err := l.Append(ctx, audit.Entry{Type: audit.TypeAction, ActionID: "a1"}); !errors.Is(err, boom) {
		t.Fatalf("append with a failed sync: %v", err)
	}
	g.release <- nil
	if _, err := l.Append(ctx, audit.Entry{Type: audit.TypeAction, ActionID: "a2"}); !errors.Is(err, boom) {
		t.Fatalf("append after a failed sync: %v", err)
	}
}

// Close waits for the last batch's sync.
func TestCloseWaitsForSync(t *testing.T) {
	db, _ := openDB(t)
	g := &gatedSync{DB: db, release: make(chan error, 1)}
	l := audit.New(g, clock.NewFake(t0))
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction, ActionID: "a1"})
		done <- err
	}()
	waitRecords(t, db, 1)
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned before the last batch was synced")
	case <-time.After(50 * time.Millisecond):
	}
	g.release <- nil
	<-closed
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// waitRecords waits until the store holds n audit records.
func waitRecords(t *testing.T, db *sqlite.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, err := db.QueryAudit(t.Context(), store.AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records committed", len(recs), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A batch that closes a sealing epoch is on disk before the epoch's key is
// erased (evolved): a key evolved past a marker the disk then lost would
// leave the log unsealable.
func TestSealMarkerSyncedBeforeKeyEvolves(t *testing.T) {
	home := t.TempDir()
	db, _ := openDB(t)
	clk := clock.NewFake(t0)
	s := audit.NewSealer(home, audit.SealerOptions{Interval: time.Hour, Records: 1000})
	if _, err := s.SetUp(t.Context(), db, home, clk.Now); err != nil {
		t.Fatal(err)
	}
	g := &gatedSync{DB: db, release: make(chan error)}
	l := audit.NewSealed(g, clk, s)
	defer closeGated(l, g)
	before, err := audit.ReadSealState(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// An answer closes the epoch after its record.
		_, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAnswer, ActionID: "a1", Seal: true})
		done <- err
	}()
	waitRecords(t, db, 3) // seal_start, the answer, the marker: committed
	time.Sleep(30 * time.Millisecond)
	if st, err := audit.ReadSealState(s.Path()); err != nil || st.Epoch != before.Epoch {
		t.Fatalf("key file at epoch %d (%v) before the marker was synced, want %d", st.Epoch, err, before.Epoch)
	}
	g.release <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st, err := audit.ReadSealState(s.Path()); err != nil || st.Epoch != before.Epoch+1 {
		t.Fatalf("key file at epoch %d (%v) after the marker was synced, want %d", st.Epoch, err, before.Epoch+1)
	}
}

// closeGated closes l, letting every sync still held through: a failing
// test does not hang in Close.
func closeGated(l *audit.Log, g *gatedSync) {
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case g.release <- nil:
			case <-stop:
				return
			}
		}
	}()
	l.Close()
	close(stop)
}
