package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// pragma reads one integer or text pragma on a connection of db.
func pragma(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var v string
	if err := db.QueryRow(`PRAGMA ` + name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func TestOpenPoolsOptions(t *testing.T) {
	tests := []struct {
		name        string
		opts        PoolOptions
		write, read map[string]string // pragma -> value
		readers     int
	}{
		{
			name: "zero value is durable",
			opts: PoolOptions{},
			write: map[string]string{
				"journal_mode": "wal", "synchronous": "2", "busy_timeout": "10000",
				"foreign_keys": "0", "temp_store": "0", "query_only": "0",
			},
			read:    map[string]string{"journal_mode": "wal", "busy_timeout": "10000", "foreign_keys": "0", "query_only": "1"},
			readers: max(4, runtime.GOMAXPROCS(0)),
		},
		{
			name: "store",
			opts: PoolOptions{ForeignKeys: true, TempStoreMemory: true, MinReaders: 4},
			write: map[string]string{
				"journal_mode": "wal", "synchronous": "2", "foreign_keys": "1", "temp_store": "2", "query_only": "0",
			},
			read:    map[string]string{"foreign_keys": "1", "query_only": "1"},
			readers: max(4, runtime.GOMAXPROCS(0)),
		},
		{
			name:    "relaxed",
			opts:    PoolOptions{SyncNormal: true, MinReaders: 1},
			write:   map[string]string{"journal_mode": "wal", "synchronous": "1", "foreign_keys": "0"},
			read:    map[string]string{"query_only": "1"},
			readers: max(1, runtime.GOMAXPROCS(0)),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := OpenPools(t.Context(), filepath.Join(t.TempDir(), "p.db"), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for name, want := range tc.write {
				if got := pragma(t, p.Write, name); got != want {
					t.Errorf("write pool: %s = %s, want %s", name, got, want)
				}
			}
			for name, want := range tc.read {
				if got := pragma(t, p.Read, name); got != want {
					t.Errorf("read pool: %s = %s, want %s", name, got, want)
				}
			}
			if got := p.Write.Stats().MaxOpenConnections; got != 1 {
				t.Errorf("write pool holds %d connections, want 1", got)
			}
			if got := p.Read.Stats().MaxOpenConnections; got != tc.readers {
				t.Errorf("read pool holds %d connections, want %d", got, tc.readers)
			}
			if _, err := p.Read.Exec(`CREATE TABLE t (x)`); err == nil {
				t.Error("the read pool wrote")
			}
		})
	}
}

// TestOpenPoolsErrors covers what Open does not reach; TestOpenErrors the
// rest.
func TestOpenPoolsErrors(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, bytes.Repeat([]byte{0xff}, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	one := []Migration{{1, "one", []string{`CREATE TABLE t1 (x)`}}}
	newer := filepath.Join(t.TempDir(), "newer.db")
	p, err := OpenPools(t.Context(), newer, PoolOptions{
		MigrationTable: "other_versions",
		Migrations:     append(one, Migration{2, "two", nil}),
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()

	tests := []struct {
		name    string
		ctx     context.Context
		path    string
		opts    PoolOptions
		wantErr error // when not nil, the error must wrap it
	}{
		{"not a database, no migrations", t.Context(), junk, PoolOptions{}, nil},
		{"cancelled while migrating", cancelled, filepath.Join(t.TempDir(), "c.db"), PoolOptions{Migrations: one}, context.Canceled},
		{"schema too new", t.Context(), newer, PoolOptions{MigrationTable: "other_versions", Migrations: one}, ErrSchemaTooNew},
		{"bad migrations", t.Context(), filepath.Join(t.TempDir(), "b.db"), PoolOptions{Migrations: []Migration{{0, "zero", nil}}}, nil},
		{"negative WAL checkpoint size", t.Context(), filepath.Join(t.TempDir(), "w.db"), PoolOptions{WALCheckpointPages: -1}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := OpenPools(tc.ctx, tc.path, tc.opts)
			if err == nil {
				p.Close()
				t.Fatal("opened")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestMigrateArguments(t *testing.T) {
	one := Migration{1, "one", []string{`CREATE TABLE t1 (x)`}}
	two := Migration{2, "two", []string{`CREATE TABLE t2 (x)`}}
	tests := []struct {
		name  string
		table string
		ms    []Migration
	}{
		{"empty table name", "", []Migration{one}},
		{"quote in table name", `v"; DROP TABLE t1; --`, []Migration{one}},
		{"space in table name", "my versions", []Migration{one}},
		{"table name starts with a digit", "1versions", []Migration{one}},
		{"no migrations", "versions", nil},
		{"version zero", "versions", []Migration{{0, "zero", nil}}},
		{"negative version", "versions", []Migration{{-1, "minus", nil}}},
		{"out of order", "versions", []Migration{two, one}},
		{"repeated version", "versions", []Migration{one, one}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := OpenPools(t.Context(), filepath.Join(t.TempDir(), "a.db"), PoolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if err := Migrate(t.Context(), p.Write, tc.table, tc.ms); err == nil {
				t.Fatal("Migrate accepted it")
			}
			var n int
			if err := p.Read.QueryRow(`SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("a refused Migrate left %d schema objects", n)
			}
		})
	}
}

// TestMigrateTables keeps two histories in one file, each with its own
// version table: neither takes the other's versions for its own.
func TestMigrateTables(t *testing.T) {
	ctx := t.Context()
	p, err := OpenPools(ctx, filepath.Join(t.TempDir(), "two.db"), PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	a := []Migration{{1, "a1", []string{`CREATE TABLE a1 (x)`}}, {2, "a2", []string{`CREATE TABLE a2 (x)`}}, {3, "a3", []string{`CREATE TABLE a3 (x)`}}}
	b := []Migration{{1, "b1", []string{`CREATE TABLE b1 (x)`}}}
	steps := []struct {
		name    string
		table   string
		ms      []Migration
		wantErr error
	}{
		{"first history", "a_versions", a, nil},
		{"second history in the same file", "b_versions", b, nil},
		{"second history again", "b_versions", b, nil},
		{"first history seen by an older program", "a_versions", a[:2], ErrSchemaTooNew},
		{"first history again", "a_versions", a, nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			err := Migrate(ctx, p.Write, s.table, s.ms)
			if s.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			if s.wantErr != nil && !errors.Is(err, s.wantErr) {
				t.Fatalf("err = %v, want %v", err, s.wantErr)
			}
		})
	}
	for table, want := range map[string]string{"a_versions": "a1,a2,a3", "b_versions": "b1"} {
		var got string
		if err := p.Read.QueryRow(`SELECT group_concat(name, ',') FROM (SELECT name FROM ` + table + ` ORDER BY version)`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s records %s, want %s", table, got, want)
		}
	}
}

func BenchmarkOpenPools(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "bench.db")
	p, err := OpenPools(b.Context(), path, PoolOptions{Migrations: migrations})
	if err != nil {
		b.Fatal(err)
	}
	p.Close()
	for b.Loop() {
		// Reopening an up-to-date file: what every short-lived process pays.
		p, err := OpenPools(b.Context(), path, PoolOptions{Migrations: migrations})
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}

// TestReopenKeepsWALAndWritesNothing: closing the last connection leaves the
// WAL file in place, emptied (a short-lived process does not create and
// remove it on every run), and opening a file whose schema is up to date
// takes no write lock and commits nothing: the database file and the WAL
// stay as they were.
func TestReopenKeepsWALAndWritesNothing(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keep.db")
	p, err := OpenPools(ctx, path, PoolOptions{Migrations: migrations})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Migrated {
		t.Fatal("a new file reports no migration applied")
	}
	if _, err := p.Write.ExecContext(ctx, `INSERT INTO state (ns, key, value) VALUES ('n', 'k', '1')`); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + suffix); err != nil {
			t.Fatalf("after close: %v", err)
		}
	}
	if fi, _ := os.Stat(path + "-wal"); fi.Size() != 0 {
		t.Fatalf("after close the WAL holds %d bytes, want it emptied", fi.Size())
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Another process holds the write lock: opening needs no write, so it
	// does not wait for it.
	other, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	held, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	for i := range 2 {
		octx, cancel := context.WithTimeout(ctx, 3*time.Second)
		p, err := OpenPools(octx, path, PoolOptions{Migrations: migrations})
		cancel()
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		if p.Migrated {
			t.Errorf("reopen %d: an up-to-date file reports a migration applied", i)
		}
		var v string
		if err := p.Read.QueryRowContext(ctx, `SELECT value FROM state WHERE ns = 'n' AND key = 'k'`).Scan(&v); err != nil || v != "1" {
			t.Fatalf("reopen %d: state %q, %v", i, v, err)
		}
		if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
			t.Fatalf("reopen %d: the WAL is %v, %v; want it kept and empty (nothing written)", i, fi, err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	held.Rollback()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("reopening an up-to-date file changed the database file")
	}
}
