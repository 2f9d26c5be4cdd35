package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/storetest"
)

func openT(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openT(t, filepath.Join(t.TempDir(), "overseer.db"))
	})
}

func TestConformanceShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		p := filepath.Join(t.TempDir(), "overseer.db")
		return openT(t, p), openT(t, p)
	})
}

func TestOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	p := filepath.Join(dir, "overseer.db")
	db := openT(t, p)
	// Write something so that the WAL exists.
	if err := db.UpdateState(t.Context(), "n", "k", func([]byte) ([]byte, error) { return []byte(`1`), nil }); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		path string
		mode os.FileMode
	}{
		{filepath.Dir(dir), 0o700},
		{dir, 0o700},
		{p, 0o600},
		{p + "-wal", 0o600},
	}
	for _, c := range checks {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			fi, err := os.Stat(c.path)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != c.mode {
				t.Fatalf("mode %o, want %o", got, c.mode)
			}
		})
	}
	if db.Path() != p {
		t.Fatalf("Path() = %q, want %q", db.Path(), p)
	}
}

func TestOpenPragmas(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "x.db"))
	conn, err := db.w.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cases := []struct {
		pragma, want string
	}{
		{"journal_mode", "wal"},
		// NORMAL: the store syncs the WAL itself after every commit
		// (syncWAL), or leaves it to an audit batch's caller (DeferSync).
		{"synchronous", "1"},
		{"foreign_keys", "1"},
		{"busy_timeout", "10000"},
		{"wal_autocheckpoint", "10000"},
	}
	for _, c := range cases {
		t.Run(c.pragma, func(t *testing.T) {
			var got string
			if err := conn.QueryRowContext(t.Context(), "PRAGMA "+c.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("%s = %s, want %s", c.pragma, got, c.want)
			}
		})
	}
	if !db.syncSelf {
		t.Fatal("a WAL-mode store does not sync its commits itself")
	}
	// The read pool cannot write.
	if _, err := db.r.ExecContext(t.Context(), `INSERT INTO state (ns, key, value) VALUES ('a', 'b', '1')`); err == nil {
		t.Fatal("read pool accepted a write")
	}
}

func TestOpenOddPath(t *testing.T) {
	for _, name := range []string{"with space.db", "q?mark.db", "hash#.db", "pct%41.db", "ünï.db"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), name)
			db := openT(t, p)
			if err := db.UpdateState(t.Context(), "n", "k", func([]byte) ([]byte, error) { return []byte(`1`), nil }); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("database not at the given path: %v", err)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	notDB := filepath.Join(t.TempDir(), "garbage.db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, path string }{
		{"empty", ""},
		{"parent is a file", filepath.Join(file, "x.db")},
		{"not a database", notDB},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, err := Open(c.path)
			if err == nil {
				db.Close()
				t.Fatal("opened")
			}
		})
	}
}

func countMigrations(t *testing.T, p string) int {
	t.Helper()
	raw, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMigrationsIdempotent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.db")
	db, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateState(t.Context(), "n", "k", func([]byte) ([]byte, error) { return []byte(`"kept"`), nil }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for i := range 3 {
		db, err := Open(p)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		v, err := db.GetState(t.Context(), "n", "k")
		db.Close()
		if err != nil || string(v) != `"kept"` {
			t.Fatalf("reopen %d: state %q, %v", i, v, err)
		}
		if n := countMigrations(t, p); n != len(migrations) {
			t.Fatalf("reopen %d: %d migrations recorded, want %d", i, n, len(migrations))
		}
	}
}

func TestMigrationsConcurrentOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.db")
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			db, err := Open(p)
			if err == nil {
				err = db.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := countMigrations(t, p); n != len(migrations) {
		t.Fatalf("%d migrations recorded, want %d", n, len(migrations))
	}
}

func TestMigrationSequence(t *testing.T) {
	ctx := t.Context()
	base := []Migration{
		{1, "one", []string{`CREATE TABLE t1 (x)`}},
		{2, "two", []string{`CREATE TABLE t2 (x)`, `INSERT INTO t2 VALUES (2)`}},
	}
	bad := append(append([]Migration{}, base...), Migration{3, "bad", []string{`CREATE TABLE t3 (x)`, `NOT SQL`}})
	good := append(append([]Migration{}, base...), Migration{3, "three", []string{`CREATE TABLE t3 (x)`}})

	p := filepath.Join(t.TempDir(), "seq.db")
	raw, err := sql.Open("sqlite", p+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	tables := func() string {
		rows, err := raw.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 't%' ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			names = append(names, n)
		}
		return strings.Join(names, ",")
	}
	steps := []struct {
		name       string
		ms         []Migration
		wantErr    bool
		wantTables string
	}{
		{"first two", base, false, "t1,t2"},
		{"again is a no-op", base, false, "t1,t2"},
		{"failing third rolls back", bad, true, "t1,t2"},
		{"fixed third", good, false, "t1,t2,t3"},
		{"older program refused", base, true, "t1,t2,t3"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			err := Migrate(ctx, raw, MigrationTable, s.ms)
			if (err != nil) != s.wantErr {
				t.Fatalf("err = %v, want error %v", err, s.wantErr)
			}
			if got := tables(); got != s.wantTables {
				t.Fatalf("tables %s, want %s", got, s.wantTables)
			}
		})
	}
	var n int
	raw.QueryRowContext(ctx, `SELECT count(*) FROM t2`).Scan(&n)
	if n != 1 {
		t.Fatalf("migration 2 ran %d times", n)
	}
}

func TestSchemaTooNew(t *testing.T) {
	p := filepath.Join(t.TempDir(), "new.db")
	db := openT(t, p)
	db.Close()
	raw, err := sql.Open("sqlite", p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', '')`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err = Open(p)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("err = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), "upgrade") {
		t.Fatalf("error does not tell what to do: %v", err)
	}
}

// TestApprovalSurvivesRestart: a pending approval is still pending after the
// process holding it goes away without answering.
func TestApprovalSurvivesRestart(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.db")
	db, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	a := &store.Approval{ID: "ap", Tool: "Bash", ArgsHash: "h", Level: action.Approve,
		Verdict: action.Verdict{Level: action.Approve}, CreatedAt: storetest.T0, Deadline: storetest.T0.Add(time.Hour)}
	if err := db.CreateApproval(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	// Abandon the handle without closing it first, as a killed process would,
	// and open a second one; then close both.
	db2 := openT(t, p)
	got, err := db2.GetApproval(t.Context(), "ap")
	if err != nil || got.Status != store.StatusPending {
		t.Fatalf("from another handle: %+v, %v", got, err)
	}
	db.Close()
	db2.Close()

	db3 := openT(t, p)
	got, err = db3.GetApproval(t.Context(), "ap")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.StatusPending || !got.Deadline.Equal(a.Deadline) {
		t.Fatalf("after restart: %+v", got)
	}
	pending, err := db3.ListApprovals(t.Context(), store.ApprovalFilter{Status: store.StatusPending})
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending after restart: %d, %v", len(pending), err)
	}
	_, applied, err := db3.AnswerApproval(t.Context(), "ap", store.StatusApproved,
		store.Answer{Decision: "approve", Who: "ann", Channel: "cli", At: storetest.T0})
	if err != nil || !applied {
		t.Fatalf("answer after restart: applied %v, %v", applied, err)
	}
}

// TestWriteWaitsForOtherWriter: a write waits for another connection's write
// lock (busy timeout) instead of failing at once, and a context ends the wait.
func TestWriteWaitsForOtherWriter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "busy.db")
	db := openT(t, p)
	other, err := sql.Open("sqlite", p+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.BeginTx(t.Context(), nil) // holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO state (ns, key, value) VALUES ('o', 'k', '1')`); err != nil {
		t.Fatal(err)
	}

	t.Run("context ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		err := db.UpdateState(ctx, "n", "k", func([]byte) ([]byte, error) { return []byte(`1`), nil })
		if err == nil {
			t.Fatal("write succeeded while another connection held the write lock")
		}
	})
	t.Run("waits for the lock", func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			done <- db.UpdateState(t.Context(), "n", "k", func([]byte) ([]byte, error) { return []byte(`2`), nil })
		}()
		select {
		case err := <-done:
			t.Fatalf("write finished while the lock was held: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("write after the lock was released: %v", err)
		}
		v, err := db.GetState(t.Context(), "o", "k")
		if err != nil || string(v) != "1" {
			t.Fatalf("other writer's value: %q, %v", v, err)
		}
	})
}

// TestAuditStoredAsGiven checks the columns an auditor reads with plain SQL.
func TestAuditStoredAsGiven(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.db")
	db := openT(t, p)
	recs := []store.AuditRecord{{Time: storetest.T0, Type: "action", Agent: "a", Data: json.RawMessage(`{"k": "v"}`)}}
	if err := db.AppendAudit(t.Context(), recs, storetest.ChainSeal()); err != nil {
		t.Fatal(err)
	}
	var ts, data string
	if err := db.r.QueryRowContext(t.Context(), `SELECT time, data FROM audit WHERE seq = 1`).Scan(&ts, &data); err != nil {
		t.Fatal(err)
	}
	if ts != "2025-03-01T12:00:00.123456789Z" || data != `{"k": "v"}` {
		t.Fatalf("stored time %q data %q", ts, data)
	}
}

func TestParseTime(t *testing.T) {
	cases := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"", time.Time{}, false},
		{"2025-03-01T12:00:00.123456789Z", storetest.T0, false},
		{"2025-03-01T12:00:00.123456789+00:00", storetest.T0, false},
		{"2025-03-01T13:00:00.123456789+01:00", storetest.T0, false},
		{"2025-03-01T12:00:00Z", storetest.T0.Truncate(time.Second), false},
		{"yesterday", time.Time{}, true},
		{"2025-13-01T12:00:00Z", time.Time{}, true},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseTime(c.in)
			if (err != nil) != c.wantErr || !got.Equal(c.want) {
				t.Fatalf("parseTime(%q) = %v, %v", c.in, got, err)
			}
		})
	}
}

func FuzzTimeRoundTrip(f *testing.F) {
	f.Add(storetest.T0.UnixNano())
	f.Add(int64(0))
	f.Add(int64(-1))
	f.Add(int64(1<<62 - 1))
	f.Fuzz(func(t *testing.T, ns int64) {
		in := time.Unix(0, ns)
		s := fmtTime(in)
		got, err := parseTime(s)
		if err != nil {
			t.Fatalf("parseTime(fmtTime(%v)) = %v", in, err)
		}
		if !got.Equal(in) {
			t.Fatalf("round trip %v -> %q -> %v", in, s, got)
		}
		// Stored times sort as text in time order.
		later := in.Add(time.Nanosecond)
		if ns < 1<<62 && fmtTime(later) <= s {
			t.Fatalf("%q does not sort before %q", s, fmtTime(later))
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"", "2025-03-01T12:00:00.123456789Z", "2025-03-01T13:00:00+01:00", "yesterday", "0000-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseTime(s)
		if err != nil {
			return
		}
		if got.Location() != time.UTC {
			t.Fatalf("parsed time in %v", got.Location())
		}
		if s != "" {
			if back, err := parseTime(fmtTime(got)); err == nil && !back.Equal(got) {
				t.Fatalf("%q: %v then %v", s, got, back)
			}
		}
	})
}

// TestApprovalAlwaysReadable: an approval that CreateApproval accepts can be
// read back, even one whose fields do not round-trip through JSON (an unset
// level): it is refused at creation rather than stored unreadable.
func TestApprovalAlwaysReadable(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "r.db"))
	cases := []struct {
		name string
		a    *store.Approval
	}{
		{"zero levels", &store.Approval{ID: "zero"}},
		{"valid", &store.Approval{ID: "ok", Level: action.Confirm, Verdict: action.Verdict{Level: action.Confirm}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := db.CreateApproval(t.Context(), c.a); err != nil {
				if c.name == "valid" {
					t.Fatal(err)
				}
				return
			}
			if _, err := db.GetApproval(t.Context(), c.a.ID); err != nil {
				t.Fatalf("accepted but unreadable: %v", err)
			}
		})
	}
}

// TestScanNonPositiveSeqs: rows with seq <= 0 (only a forger writes them)
// are outside ScanAudit(0) and inside a scan from math.MinInt64, and a page
// made only of them does not stall the scan.
func TestScanNonPositiveSeqs(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "neg.db"))
	if err := db.AppendAudit(t.Context(), []store.AuditRecord{{Time: storetest.T0, Type: "a", Data: json.RawMessage(`1`)}},
		storetest.ChainSeal()); err != nil {
		t.Fatal(err)
	}
	tx, err := db.w.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	const forged = scanPage + 200
	for i := range forged {
		if _, err := tx.Exec(`INSERT INTO audit (seq, time, type, data, prev_hash, hash) VALUES (?, ?, 'x', '{}', '', '')`,
			-int64(i), fmtTime(storetest.T0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	count := func(after int64) int {
		n := 0
		if err := db.ScanAudit(t.Context(), after, func(store.AuditRecord) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(0); n != 1 {
		t.Fatalf("ScanAudit(0) saw %d records, want 1", n)
	}
	if n := count(math.MinInt64); n != forged+1 {
		t.Fatalf("ScanAudit(MinInt64) saw %d records, want %d", n, forged+1)
	}
	if n := count(-10); n != 11 { // -9..0 and 1
		t.Fatalf("ScanAudit(-10) saw %d records, want 11", n)
	}
}

// OthersVersion changes with a commit by another DB on the file (another
// process's, in the daemon), and not with the store's own commits.
func TestOthersVersion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v.db")
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	put := func(d *DB, key string) {
		t.Helper()
		if err := d.UpdateState(ctx, "t", key, func([]byte) ([]byte, error) { return []byte(`1`), nil }); err != nil {
			t.Fatal(err)
		}
	}
	v0, err := a.OthersVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	put(a, "own")
	if v, err := a.OthersVersion(ctx); err != nil || v != v0 {
		t.Fatalf("after its own commit: %d, %v; want %d", v, err, v0)
	}
	put(b, "other")
	v1, err := a.OthersVersion(ctx)
	if err != nil || v1 == v0 {
		t.Fatalf("after another's commit: %d, %v; want a change from %d", v1, err, v0)
	}
	if v, err := a.OthersVersion(ctx); err != nil || v != v1 {
		t.Fatalf("read again: %d, %v; want %d", v, err, v1)
	}
	// While an audit batch holds the write lock, the version is answered
	// without waiting for the batch, and is current: it has b's commit
	// made just before.
	put(b, "other again")
	var during int64
	batch := &store.AuditBatch{Writes: []*store.AuditWrite{{Rec: store.AuditRecord{Type: "t", Data: json.RawMessage(`1`)}}},
		Seal: func(tail store.AuditTail, recs []*store.AuditRecord) ([]store.AuditRecord, error) {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			v, err := a.OthersVersion(wctx)
			if err != nil {
				return nil, fmt.Errorf("version during the batch: %w", err)
			}
			during = v
			for i, r := range recs {
				r.Seq, r.Time, r.PrevHash, r.Hash = tail.Seq+int64(i)+1, time.Now(), "p", "h"
			}
			return nil, nil
		}}
	if err := a.AppendAuditBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if during == v1 {
		t.Fatalf("during the batch: %d, the version before another's commit", during)
	}
	if v, err := a.OthersVersion(ctx); err != nil || v != during {
		t.Fatalf("after the batch: %d, %v; want %d (as during it)", v, err, during)
	}
	a.Close()
	if _, err := a.OthersVersion(ctx); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
