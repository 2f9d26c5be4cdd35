package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/storetest"
)

func auditBatch(typ string, deferSync bool) *store.AuditBatch {
	return &store.AuditBatch{Writes: []*store.AuditWrite{{Rec: store.AuditRecord{Type: typ, Data: []byte(`{}`)}}},
		Seal: storetest.BatchSeal(), DeferSync: deferSync}
}

// An audit batch with DeferSync is committed (visible to another handle on
// the file) and left for its caller to sync; without it, or for any other
// write, the store syncs before it returns.
func TestDeferSync(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.db")
	db := openT(t, p)
	if db.wal == nil {
		t.Fatal("Open did not sync the new WAL's directory")
	}
	other := openT(t, p)
	b := auditBatch("action", true)
	if err := db.AppendAuditBatch(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if b.Sync == nil {
		t.Fatal("a deferred batch has no Sync")
	}
	recs, err := other.QueryAudit(t.Context(), store.AuditQuery{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("committed batch seen by another handle: %d records, %v", len(recs), err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	b = auditBatch("verdict", false)
	if err := db.AppendAuditBatch(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if b.Sync != nil {
		t.Fatal("a batch without DeferSync was left unsynced")
	}
}

// After a failed sync every write fails, deferred or not: the pages the
// failed sync could not write may be gone, and a later sync would not say.
func TestSyncFailureSticks(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "x.db"))
	boom := errors.New("EIO")
	db.smu.Lock()
	db.syncErr = boom
	db.smu.Unlock()
	if err := db.UpdateState(t.Context(), "ns", "k", func([]byte) ([]byte, error) { return []byte(`1`), nil }); !errors.Is(err, boom) {
		t.Fatalf("write after a failed sync: %v", err)
	}
	b := auditBatch("action", true)
	if err := db.AppendAuditBatch(t.Context(), b); err != nil {
		t.Fatal(err) // committed; the sync is the caller's
	}
	if err := b.Sync(); !errors.Is(err, boom) {
		t.Fatalf("deferred sync after a failed sync: %v", err)
	}
	if err := db.AppendAuditBatch(t.Context(), auditBatch("verdict", false)); !errors.Is(err, boom) {
		t.Fatalf("audit batch after a failed sync: %v", err)
	}
}

// The WAL file is synced through the descriptor opened once: taking its
// permissions away (as a process of the same user could) does not make
// every later write fail.
func TestSyncKeepsTheWALOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.db")
	db := openT(t, p)
	if err := db.AppendAuditBatch(t.Context(), auditBatch("action", false)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p+"-wal", 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(p+"-wal", 0o600)
	if err := db.AppendAuditBatch(t.Context(), auditBatch("verdict", false)); err != nil {
		t.Fatalf("write after the WAL's permissions were taken away: %v", err)
	}
}

// SyncCommitted syncs what was committed, and reports a failed sync.
func TestSyncCommitted(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "x.db"))
	b := auditBatch("action", true)
	if err := db.AppendAuditBatch(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if err := db.SyncCommitted(); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("EIO")
	db.smu.Lock()
	db.syncErr = boom
	db.smu.Unlock()
	if err := db.SyncCommitted(); !errors.Is(err, boom) {
		t.Fatalf("SyncCommitted after a failed sync: %v", err)
	}
}
