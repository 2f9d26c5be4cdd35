package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"modernc.org/sqlite"
)

// PoolOptions says how OpenPools opens a file. The zero value gives durable
// commits (synchronous=FULL), no foreign-key enforcement, no migrations and
// a read pool of at least four connections.
type PoolOptions struct {
	// SyncNormal lowers the write pool's synchronous level from FULL to
	// NORMAL: in WAL mode a commit then survives a crash of the program but
	// may be lost to a crash of the machine, and costs no sync of its own.
	SyncNormal bool
	// ForeignKeys enforces foreign keys on both pools.
	ForeignKeys bool
	// TempStoreMemory keeps the write pool's temporary tables and indexes
	// in memory.
	TempStoreMemory bool
	// WALCheckpointPages is the write pool's wal_autocheckpoint: after a
	// commit that leaves the WAL holding at least this many pages, the
	// writer copies them into the database file. It bounds the WAL (at
	// about this many pages, plus one transaction); a larger value makes
	// checkpoints rarer, and a page that several commits changed is copied
	// once. Zero keeps SQLite's default, 1000 pages.
	WALCheckpointPages int
	// MinReaders is the read pool's smallest size: it holds
	// max(MinReaders, GOMAXPROCS) connections. Zero means 4.
	MinReaders int
	// Migrations, when not empty, are applied with Migrate on the write
	// pool, recording versions in MigrationTable, before the read pool is
	// opened.
	Migrations []Migration
	// MigrationTable is the version table of Migrations; empty means
	// "schema_migrations" (MigrationTable).
	MigrationTable string
}

// Pools is one SQLite file opened as a single-connection write pool and a
// pool of readers. Several Pools, in one or several processes, may share a
// file.
type Pools struct {
	// Path is the file's absolute path.
	Path string
	// Write has exactly one connection, in WAL mode, and runs every
	// transaction as BEGIN IMMEDIATE, so that writers are serialised within
	// a process by the pool and across processes by SQLite's write lock,
	// which they wait for up to BusyTimeout.
	Write *sql.DB
	// Read is query_only; its readers see WAL snapshots and never block
	// the writer.
	Read *sql.DB
	// Migrated reports whether OpenPools applied a migration (committed
	// at the write pool's synchronous level: not synced when that is
	// NORMAL).
	Migrated bool
}

// OpenPools opens (creating if needed) the SQLite file at path as a write
// pool and a read pool, and applies o.Migrations. Parent directories are
// created with mode 0700 and a new file with mode 0600 (SQLite gives its
// -wal and -shm files the same mode). ctx bounds the wait for the file's
// write lock while migrations run; the pools outlive it.
func OpenPools(ctx context.Context, path string, o PoolOptions) (*Pools, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: create directory: %w", err)
	}
	// Create the file ourselves so that it gets mode 0600.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: create database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: create database file: %w", err)
	}

	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", BusyTimeout.Milliseconds())
	wp := []string{busy, "_pragma=journal_mode(WAL)", "_pragma=synchronous(FULL)"}
	if o.SyncNormal {
		wp[2] = "_pragma=synchronous(NORMAL)"
	}
	if o.TempStoreMemory {
		wp = append(wp, "_pragma=temp_store(MEMORY)")
	}
	if o.WALCheckpointPages < 0 {
		return nil, fmt.Errorf("sqlite: negative WAL checkpoint size %d", o.WALCheckpointPages)
	}
	if o.WALCheckpointPages > 0 {
		wp = append(wp, fmt.Sprintf("_pragma=wal_autocheckpoint(%d)", o.WALCheckpointPages))
	}
	rp := []string{busy}
	if o.ForeignKeys {
		wp = append(wp, "_pragma=foreign_keys(ON)")
		rp = append(rp, "_pragma=foreign_keys(ON)")
	}
	// The WAL file is kept, emptied, when the last connection to the file
	// closes, instead of being removed (see keepWAL).
	jl := fmt.Sprintf("_pragma=journal_size_limit(%d)", walSizeLimit)
	wp = append(wp, jl, "_txlock=immediate")
	rp = append(rp, jl, "_pragma=query_only(1)")

	w, err := openKeepWAL(dsn(abs, wp...))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	migrated := false
	if len(o.Migrations) > 0 {
		table := o.MigrationTable
		if table == "" {
			table = MigrationTable
		}
		migrated, err = migrate(ctx, w, table, o.Migrations)
	} else if err = w.PingContext(ctx); err != nil {
		err = fmt.Errorf("sqlite: open: %w", err)
	}
	if err != nil {
		w.Close()
		return nil, err
	}

	r, err := openKeepWAL(dsn(abs, rp...))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	n := o.MinReaders
	if n <= 0 {
		n = 4
	}
	n = max(n, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	return &Pools{Path: abs, Write: w, Read: r, Migrated: migrated}, nil
}

// walSizeLimit is the pools' journal_size_limit: a WAL file that a
// checkpoint has emptied is cut down to this size when it is reused, and to
// nothing when the last connection closes.
const walSizeLimit = 64 << 20

// openKeepWAL opens a pool on dsn whose connections keep the WAL file when
// the last of them closes (SQLITE_FCNTL_PERSIST_WAL): SQLite still
// checkpoints it into the database file then, and, with a
// journal_size_limit, empties it, but does not remove it and the -shm file.
// A short-lived process (a hook judging one call) would otherwise create
// both files anew, and remove them on its way out, on every run.
func openKeepWAL(dsn string) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(keepWAL{c}), nil
}

// keepWAL is a connector whose connections set SQLITE_FCNTL_PERSIST_WAL.
type keepWAL struct{ driver.Connector }

func (k keepWAL) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := k.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	fc, ok := c.(sqlite.FileControl)
	if !ok {
		c.Close()
		return nil, errors.New("sqlite: the driver's connection has no file control")
	}
	if _, err := fc.FileControlPersistWAL("main", 1); err != nil {
		c.Close()
		return nil, fmt.Errorf("sqlite: keep the WAL file: %w", err)
	}
	return c, nil
}

// Close closes both pools.
func (p *Pools) Close() error {
	return errors.Join(p.Write.Close(), p.Read.Close())
}

// dsn builds a file: URI for path with the given query parameters. The
// characters that a URI gives a meaning to are escaped in the path.
func dsn(path string, params ...string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + esc.Replace(filepath.ToSlash(path)) + "?" + strings.Join(params, "&")
}
