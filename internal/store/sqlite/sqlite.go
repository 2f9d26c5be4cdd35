// Package sqlite is the embedded, zero-setup implementation of store.Store,
// on a single SQLite file in WAL mode (modernc.org/sqlite, no cgo).
//
// The file may be shared by several processes at once (the daemon and a
// short-lived hook process, for example). Every write runs in a
// BEGIN IMMEDIATE transaction on a single-connection write pool, so writers
// are serialised within a process by the pool and across processes by
// SQLite's write lock (waiting up to the busy timeout); reads use a separate
// pool and never block writers. Commits are durable before a write method
// returns, because an audit record must be on disk before the action it
// describes proceeds: the store syncs the WAL file itself after each commit
// (the write connection runs at synchronous=NORMAL, which syncs only at
// checkpoints), as synchronous=FULL would inside it. The one exception is
// an audit batch whose caller asks to sync it itself
// (store.AuditBatch.DeferSync): the audit log's writer then commits the
// next batch while the disk syncs the last, and answers no one before the
// sync has returned.
//
// The schema is versioned: Open applies the missing migrations in order, each
// in its own transaction, and refuses a database written by a newer version
// of the program (ErrSchemaTooNew).
//
// The plumbing under the store is exported for other SQLite files of the
// program: OpenPools opens a file as such a pair of pools, and Migrate
// brings a versioned schema up to date.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"

	"github.com/overseer-dev/overseer/internal/store"
)

// BusyTimeout is how long a write waits for another connection or process
// holding the database's write lock before it fails.
const BusyTimeout = 10 * time.Second

// WALCheckpointPages is the store's WAL checkpoint threshold (see
// PoolOptions.WALCheckpointPages): 10,000 pages, about 40 MB with the
// default 4 KB page. Under a stream of audit appends, checkpointing every
// 1,000 pages (SQLite's default) spent about a sixth of the writer's time
// copying and syncing pages that the next commits changed again.
const WALCheckpointPages = 10000

// ErrSchemaTooNew is returned (wrapped) by Open, OpenPools and Migrate for a
// database whose schema was written by a newer version of the program.
var ErrSchemaTooNew = errors.New("sqlite: database schema is newer than this program")

// DB is a store.Store on one SQLite file. It is safe for concurrent use, and
// several DBs (in one or several processes) may share the same file.
type DB struct {
	path   string
	w      *sql.DB // exactly one connection; every transaction is BEGIN IMMEDIATE
	r      *sql.DB // readers; query_only
	closed atomic.Bool

	// Prepared on w at Open (see prepareAudit).
	tailStmt    *sql.Stmt
	versionStmt *sql.Stmt
	// The multi-row statements, prepared on w when first needed (see
	// prepareSizes), under pmu.
	pmu           sync.Mutex
	insertStmts   [len(insertSizes)]*sql.Stmt
	putStateStmts [len(insertSizes)]*sql.Stmt

	// Prepared audit queries on r, by their SQL (see queryStmt).
	qmu     sync.Mutex
	queries map[string]*sql.Stmt

	// syncSelf: the file is in WAL mode and w commits at
	// synchronous=NORMAL; write syncs the WAL itself (see syncWAL).
	syncSelf bool
	smu      sync.Mutex  // one syncWAL at a time; guards wal, walInfo and syncErr
	wal      *os.File    // the WAL file syncWAL syncs (nil before the first sync)
	walInfo  os.FileInfo // wal's identity
	syncErr  error       // a sync failed (see syncWAL)

	// While an audit batch holds the file's write lock, the data version
	// its transaction read after taking it (see OthersVersion).
	vmu           sync.Mutex
	lockHeld      bool
	lockedVersion int64
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the database at path and brings its schema
// up to date. Parent directories are created with mode 0700 and a new file
// with mode 0600.
func Open(path string) (*DB, error) {
	return OpenContext(context.Background(), path)
}

// OpenContext is Open with a context bounding the wait for the database's
// write lock while migrations run.
func OpenContext(ctx context.Context, path string) (*DB, error) {
	p, err := OpenPools(ctx, path, PoolOptions{
		// Commits are made durable by the store itself (see syncWAL):
		// every write syncs before it returns, as synchronous=FULL would,
		// and an audit batch may leave the sync to its caller.
		SyncNormal:         true,
		ForeignKeys:        true,
		TempStoreMemory:    true,
		WALCheckpointPages: WALCheckpointPages,
		MinReaders:         4,
		Migrations:         migrations,
	})
	if err != nil {
		return nil, err
	}
	d := &DB{path: p.Path, w: p.Write, r: p.Read, queries: map[string]*sql.Stmt{}}
	if err := d.prepareAudit(ctx); err != nil {
		d.Close()
		return nil, err
	}
	var mode string
	if err := d.w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		d.Close()
		return nil, fmt.Errorf("sqlite: journal mode: %w", err)
	}
	if mode == "wal" {
		d.syncSelf = true
		if p.Migrated {
			// The migrations committed without a sync of their own.
			err = d.syncWAL()
		}
	} else {
		// Not in WAL mode (a file system without shared memory): SQLite
		// syncs every commit itself.
		_, err = d.w.ExecContext(ctx, `PRAGMA synchronous = FULL`)
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	return d, nil
}

// syncWAL makes every commit so far durable: it syncs the WAL file, whose
// frames hold them (the write connection runs at synchronous=NORMAL, which
// syncs only at checkpoints). A WAL file it has not synced before (a new
// one) has its directory synced too, so that the file's name survives a
// crash as SQLite's own first sync of a new WAL would. With no WAL file
// its frames are all in the database file (the WAL is removed only after a
// checkpoint that synced it), which is synced instead.
//
// A failed sync fails every later one: the pages it could not write may be
// dropped, and a later sync would succeed without them.
func (d *DB) syncWAL() error {
	d.smu.Lock()
	defer d.smu.Unlock()
	if d.syncErr != nil {
		return d.syncErr
	}
	wal := d.path + "-wal"
	fi, err := os.Stat(wal)
	if errors.Is(err, fs.ErrNotExist) {
		f, err := os.OpenFile(d.path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		defer f.Close()
		return d.failSync(dataSync(f))
	}
	if err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	// The WAL file stays open between syncs (SQLite keeps it for as long
	// as the store is open); a new file is opened, and its directory
	// synced once.
	fresh := d.wal == nil || !os.SameFile(fi, d.walInfo)
	if fresh {
		f, err := os.OpenFile(wal, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		ffi, err := f.Stat()
		if err != nil {
			f.Close()
			return fmt.Errorf("sync: %w", err)
		}
		if d.wal != nil {
			d.wal.Close()
		}
		d.wal, d.walInfo = f, ffi
	}
	if err := d.failSync(dataSync(d.wal)); err != nil || !fresh {
		return err
	}
	dir, err := os.Open(filepath.Dir(d.path))
	if err != nil {
		d.wal.Close()
		d.wal = nil // synced again, with its directory, next time
		return fmt.Errorf("sync directory: %w", err)
	}
	defer dir.Close()
	return d.failSync(dir.Sync())
}

// SyncCommitted makes every commit so far durable: a reader that tells
// others of what it read (the audit head a daemon publishes) calls it
// first, as a commit may be visible a moment before it is on disk (see the
// package documentation).
func (d *DB) SyncCommitted() error {
	if !d.syncSelf {
		return nil
	}
	return d.wrap("sync", d.syncWAL())
}

// failSync keeps a failed sync's error for every later one (under smu).
func (d *DB) failSync(err error) error {
	if err != nil {
		d.syncErr = fmt.Errorf("sync: %w (no write is durable until the database is reopened)", err)
	}
	return d.syncErr
}

// OthersVersion returns a number that changes whenever a commit to the
// file is made by anyone but this store: another process, or another DB
// open on the same file (SQLite's data_version, as the store's write
// connection sees it). The store's own commits leave it as it is, so a
// caller that remembers it can tell, without a query of the data, that
// nothing but its own process wrote since: the daemon's check for rule
// changes before each call. While an audit batch is being written it
// answers at once with the version the batch read after taking the file's
// write lock: no one else can commit while the batch holds it, so that
// version is current (and the check before a call need not wait for the
// batch's commit, which it did, and in step with it). Otherwise it waits
// for a write under way to commit.
func (d *DB) OthersVersion(ctx context.Context) (int64, error) {
	if err := d.check(ctx); err != nil {
		return 0, d.wrap("data version", err)
	}
	d.vmu.Lock()
	v, held := d.lockedVersion, d.lockHeld
	d.vmu.Unlock()
	if held {
		return v, nil
	}
	err := d.versionStmt.QueryRowContext(ctx).Scan(&v)
	return v, d.wrap("data version", err)
}

// Path returns the database file's absolute path.
func (d *DB) Path() string { return d.path }

// Close closes the database. Further calls of any method return
// store.ErrClosed. Closing twice is not an error.
func (d *DB) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	var errs []error
	d.pmu.Lock()
	for _, s := range append(append(d.insertStmts[:], d.putStateStmts[:]...), d.tailStmt, d.versionStmt) {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	d.pmu.Unlock()
	d.smu.Lock()
	if d.wal != nil {
		errs = append(errs, d.wal.Close())
		d.wal = nil
	}
	d.smu.Unlock()
	d.qmu.Lock()
	for _, s := range d.queries {
		errs = append(errs, s.Close())
	}
	d.queries = nil
	d.qmu.Unlock()
	return errors.Join(append(errs, d.w.Close(), d.r.Close())...)
}

// check reports whether an operation may start.
func (d *DB) check(ctx context.Context) error {
	if d.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// wrap adds context to err and turns errors caused by a concurrent Close
// into store.ErrClosed.
func (d *DB) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if d.closed.Load() && !errors.Is(err, store.ErrClosed) {
		return fmt.Errorf("sqlite: %s: %w (%v)", op, store.ErrClosed, err)
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}

// write runs fn in a BEGIN IMMEDIATE transaction and commits it durably.
// The transaction is rolled back when fn fails.
func (d *DB) write(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	if err := d.commit(ctx, op, fn); err != nil {
		return err
	}
	if d.syncSelf {
		return d.wrap(op, d.syncWAL())
	}
	return nil
}

// commit is write without the sync: the commit is visible, and durable
// only once syncWAL has returned (at once when !d.syncSelf).
func (d *DB) commit(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	if err := d.check(ctx); err != nil {
		return d.wrap(op, err)
	}
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return d.wrap(op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return d.wrap(op, err)
	}
	if err := tx.Commit(); err != nil {
		return d.wrap(op, err)
	}
	return nil
}

// read runs fn in a read transaction, which sees one consistent snapshot.
func (d *DB) read(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	if err := d.check(ctx); err != nil {
		return d.wrap(op, err)
	}
	tx, err := d.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return d.wrap(op, err)
	}
	defer func() { _ = tx.Rollback() }() // read-only: nothing to undo
	return d.wrap(op, fn(tx))
}

// timeLayout is how times are stored: UTC, RFC 3339 with exactly nine
// fractional digits, so that stored times sort as text and indexes on them
// serve range queries. It parses with time.RFC3339Nano.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

func fmtTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// fmtOptTime stores a zero time as the empty string.
func fmtOptTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return fmtTime(t)
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad stored time %q: %w", s, err)
	}
	return t.UTC(), nil
}
