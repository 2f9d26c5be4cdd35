// Package postgres is the implementation of store.Store on PostgreSQL
// (pgx's protocol layer, github.com/jackc/pgx/v5/pgconn, pure Go), for a team or a fleet: several
// Overseer daemons sharing one database share its policy's user layer, its
// approvals queue, its state and one audit chain.
//
// Every write is one transaction, committed durably (the server's
// synchronous_commit) before the method returns. What must be serialised
// across processes is serialised by the database, never by this process:
//
//   - audit appends take a transaction-scoped advisory lock (auditLock)
//     before they read the chain's tail, so each batch is sealed against the
//     true tail and the chain stays one chain; the lock is held for one
//     commit of one batch, and each daemon already gathers its concurrent
//     appends into batches (package audit), so instances take turns per
//     batch rather than per record;
//   - an answer locks its approval's row (SELECT … FOR UPDATE), so the first
//     terminal answer wins whichever instance gives it;
//   - a state update locks its key (an advisory lock on the key's hash,
//     which also covers a key not written yet);
//   - a change of the user layer locks the rules version counter.
//
// Changes other instances act on at once — an answer, a new approval, a
// change of the user layer — are announced with NOTIFY in the transaction
// that makes them (delivered on commit); Watch listens for them. A waiter
// that misses one (the listening connection dropped) still sees the change
// at its next poll of the store.
//
// Times are stored as Unix nanoseconds (PostgreSQL's timestamps keep
// microseconds; the audit chain's hashes cover nanoseconds), and JSON as
// text, byte for byte as given.
//
// The schema is versioned like the SQLite store's: Open applies the missing
// migrations in order, each in its own transaction under an advisory lock,
// so instances starting at once apply each step exactly once; a database
// written by a newer program is refused (ErrSchemaTooNew).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/overseer-dev/overseer/internal/store"
)

// ErrSchemaTooNew is returned (wrapped) by Open for a database whose schema
// was written by a newer version of the program.
var ErrSchemaTooNew = errors.New("postgres: database schema is newer than this program")

// Advisory lock keys (the two-key form: class, object). The class keeps
// them apart from any other user of the database's advisory locks.
const (
	lockClass     = 0x0b5e // "overseer"
	auditLock     = 1
	migrationLock = 2
	rulesLock     = 3
	stateClass    = lockClass + 1 // objects: the hash of a state key
	leadClass     = lockClass + 2 // objects: the hash of a leadership's schema and name
)

// ConnectTimeout bounds a new connection to the server when the URL sets
// none (connect_timeout).
const ConnectTimeout = 5 * time.Second

// WriteTimeout bounds one write transaction, waits for locks included: a
// server that stops answering in the middle of one (the network dropped)
// fails it, and the action it records is refused, instead of holding the
// audit log's writer, and every request behind it, until the system's TCP
// timeout.
const WriteTimeout = 30 * time.Second

// writeTimeout is WriteTimeout; tests shorten it.
var writeTimeout = WriteTimeout

// ReadTimeout bounds one read, as WriteTimeout bounds a write: a server
// that stops answering, or a table another client holds locked, fails the
// read (and what depended on it fails closed: the call goes to a person or
// is refused) instead of holding the request, or a background loop of the
// daemon, until the system's TCP timeout.
const ReadTimeout = 30 * time.Second

// readTimeout is ReadTimeout; tests shorten it.
var readTimeout = ReadTimeout

// CloseTimeout bounds how long Close waits for the calls under way.
const CloseTimeout = 10 * time.Second

// Channel is the NOTIFY channel the store announces changes on.
const Channel = "overseer_changes"

// IsURL reports whether s names a PostgreSQL database (a postgres:// or
// postgresql:// URL).
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// DB is a store.Store on a PostgreSQL database. It is safe for concurrent
// use, and several DBs (in one or several processes, on one or several
// machines) may share the same database.
type DB struct {
	pool   *pool
	cfg    *pgconn.Config // for the listening connection
	closed atomic.Bool
	stop   context.CancelFunc // ends the listeners
	ctx    context.Context    // the listeners' context
	leadMu sync.Mutex         // orders a new lead's start before Close's wait
	leads  sync.WaitGroup     // the goroutines holding a lead (Close waits for them)

	// listening counts the Watch connections listening now; heard counts
	// the notifications they heard and the times they started listening
	// (see OthersVersion).
	listening atomic.Int32
	heard     atomic.Int64

	guessMu sync.Mutex
	guess   *store.AuditTail // the chain's tail after this DB's last append (see appendGuessed)
	misses  atomic.Int64     // appendGuessed's tries that found another tail
	unsure  int              // batches left to append without a guess after a miss (under guessMu)
}

var (
	_ store.Store   = (*DB)(nil)
	_ store.Watcher = (*DB)(nil)
)

// Open connects to the database at url (a postgres:// URL, or key=value
// connection string, as libpq reads them, including its passfile and
// environment) and brings its schema up to date.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, pc, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout == 0 {
		// Without one, a server that drops packets holds every request
		// that needs a new connection for the system's TCP timeout;
		// with it, they fail (closed) in seconds.
		cfg.ConnectTimeout = ConnectTimeout
	}
	lctx, stop := context.WithCancel(context.Background())
	d := &DB{pool: newPool(cfg, pc), cfg: cfg.Copy(), stop: stop, ctx: lctx}
	if err := d.migrate(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// parseURL reads a database URL as libpq does, and the pool's settings
// from the parameters pgxpool (which the store used before) reads:
//
//   - pool_max_conns: the most connections lent at once, by default the
//     number of processors; when that is under 8, twice the processors Go
//     uses, and at least 8;
//   - pool_max_conn_lifetime (a Go duration, "1h30m"; default an hour) and
//     pool_max_conn_lifetime_jitter (default a tenth of the lifetime): a
//     connection is closed once it has lived the one and a random part of
//     the other, when it is given back or next taken;
//   - pool_max_conn_idle_time: a connection idle for longer is closed
//     (default a minute);
//   - pool_health_check_period: how often the idle connections are checked
//     (default 5s).
//
// pgx's other parameters (pool_min_conns, pool_min_idle_conns,
// pool_ping_timeout, the statement and description cache sizes, the query
// exec mode), which earlier versions took, are accepted and ignored; any
// other pool_ parameter is an error (a misspelt setting does not pass
// unnoticed). None of them is sent to the server.
func parseURL(url string) (*pgconn.Config, poolConfig, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		// The parse error may quote the URL, password and all.
		return nil, poolConfig{}, errors.New("postgres: the database URL does not parse")
	}
	pc := poolConfig{maxConns: max(4, runtime.NumCPU()), maxLifetime: defaultMaxConnLifetime, lifetimeJitter: -1,
		maxIdle: defaultMaxConnIdleTime, healthCheck: defaultHealthCheck}
	for k, v := range cfg.RuntimeParams {
		var dur *time.Duration
		switch k {
		case "pool_max_conns":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, poolConfig{}, errors.New("postgres: the database URL's pool_max_conns is not a positive number")
			}
			pc.maxConns = n
		case "pool_max_conn_lifetime":
			dur = &pc.maxLifetime
		case "pool_max_conn_lifetime_jitter":
			dur = &pc.lifetimeJitter
		case "pool_max_conn_idle_time":
			dur = &pc.maxIdle
		case "pool_health_check_period":
			dur = &pc.healthCheck
		case "pool_min_conns", "pool_min_idle_conns", "pool_ping_timeout",
			"statement_cache_capacity", "description_cache_capacity", "default_query_exec_mode":
		default:
			if strings.HasPrefix(k, "pool_") {
				return nil, poolConfig{}, fmt.Errorf("postgres: the database URL's parameter %q is not a setting Overseer knows", k)
			}
			continue
		}
		if dur != nil {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d == 0 && dur != &pc.lifetimeJitter {
				return nil, poolConfig{}, fmt.Errorf("postgres: the database URL's %s is not a positive duration (such as 30m or 1h30m)", k)
			}
			*dur = d
		}
		delete(cfg.RuntimeParams, k)
	}
	if pc.lifetimeJitter < 0 {
		pc.lifetimeJitter = pc.maxLifetime / 10
	}
	if pc.maxConns < 8 {
		pc.maxConns = max(8, 2*runtime.GOMAXPROCS(0))
	}
	return cfg, pc, nil
}

// Close closes the database's connections. Further calls of any method
// return store.ErrClosed; the calls under way finish first (for up to
// CloseTimeout, after which what they still run fails, and Close says so).
// Closing twice is not an error.
func (d *DB) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	d.stop()
	ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
	defer cancel()
	err := d.pool.Close(ctx)
	d.leadMu.Lock() // a Lead from now on sees d.closed
	d.leadMu.Unlock()
	d.leads.Wait()
	return err
}

// check reports whether an operation may start.
func (d *DB) check(ctx context.Context) error {
	if d.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// wrap adds context to err and turns errors caused by a concurrent Close
// into store.ErrClosed, and a context's end into its error.
func (d *DB) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if d.closed.Load() && !errors.Is(err, store.ErrClosed) {
		return fmt.Errorf("postgres: %s: %w (%v)", op, store.ErrClosed, err)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("postgres: %s: %w (%v)", op, cerr, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// write runs fn in a transaction and commits it. The transaction is rolled
// back when fn fails.
func (d *DB) write(ctx context.Context, op string, fn func(*tx) error) error {
	if err := d.check(ctx); err != nil {
		return d.wrap(ctx, op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	tx, err := d.pool.Begin(ctx, `BEGIN`)
	if err != nil {
		return d.wrap(ctx, op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(context.Background())
		return d.wrap(ctx, op, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return d.wrap(ctx, op, err)
	}
	return nil
}

// read runs fn in a read-only transaction that sees one snapshot.
func (d *DB) read(ctx context.Context, op string, fn func(*tx) error) error {
	if err := d.check(ctx); err != nil {
		return d.wrap(ctx, op, err)
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	tx, err := d.pool.Begin(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	if err != nil {
		return d.wrap(ctx, op, err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }() // read-only: nothing to undo
	return d.wrap(ctx, op, fn(tx))
}

// readOne runs a single read statement outside an explicit transaction
// (one statement sees one snapshot).
func (d *DB) readOne(ctx context.Context, op string, fn func(q querier) error) error {
	if err := d.check(ctx); err != nil {
		return d.wrap(ctx, op, err)
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > readTimeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readTimeout)
		defer cancel()
	}
	return d.wrap(ctx, op, fn(bound{d.pool, ctx}))
}

// notify announces a change on Channel when tx commits.
func notify(ctx context.Context, tx querier, kind, id string) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, kind+":"+id)
	return err
}

// nanos stores a time as Unix nanoseconds; the zero time as 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos reads a time stored by nanos, in UTC.
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
