package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// Migration is one step of a schema's history. Steps are never edited once
// released; a change is a new step with the next version.
type Migration struct {
	// Version numbers the step; the steps of a history have increasing
	// versions, from 1.
	Version int
	// Name says what the step does; it is recorded with the version.
	Name string
	// Stmts are the SQL statements of the step, run in order in one
	// transaction.
	Stmts []string
}

// MigrationTable is the table in which the store records the versions of its
// schema that a database has.
const MigrationTable = "schema_migrations"

// migrations is the store's schema history, in order. Versions start at 1
// and increase by one.
var migrations = []Migration{
	{Version: 1, Name: "initial schema", Stmts: []string{
		`CREATE TABLE audit (
			seq       INTEGER PRIMARY KEY,
			time      TEXT NOT NULL,
			type      TEXT NOT NULL,
			action_id TEXT NOT NULL DEFAULT '',
			agent     TEXT NOT NULL DEFAULT '',
			session   TEXT NOT NULL DEFAULT '',
			tool      TEXT NOT NULL DEFAULT '',
			data      TEXT NOT NULL,
			prev_hash TEXT NOT NULL,
			hash      TEXT NOT NULL
		)`,
		`CREATE INDEX audit_time ON audit (time)`,
		`CREATE INDEX audit_type ON audit (type, seq)`,
		`CREATE INDEX audit_action ON audit (action_id, seq) WHERE action_id <> ''`,
		`CREATE INDEX audit_agent ON audit (agent, seq) WHERE agent <> ''`,
		`CREATE INDEX audit_session ON audit (session, seq) WHERE session <> ''`,
		`CREATE INDEX audit_tool ON audit (tool, seq) WHERE tool <> ''`,

		// The approval as created is kept whole in body (JSON, without its
		// status and answers); the columns are what queries filter on and
		// what the compare-and-set of an answer changes.
		`CREATE TABLE approvals (
			id         TEXT PRIMARY KEY,
			status     TEXT NOT NULL,
			created_at TEXT NOT NULL,
			deadline   TEXT NOT NULL,
			args_hash  TEXT NOT NULL,
			session    TEXT NOT NULL,
			action_id  TEXT NOT NULL,
			body       TEXT NOT NULL,
			answer     TEXT
		)`,
		`CREATE INDEX approvals_status ON approvals (status, created_at)`,
		`CREATE INDEX approvals_args_hash ON approvals (args_hash, created_at)`,
		`CREATE INDEX approvals_session ON approvals (session, created_at)`,
		`CREATE TABLE approval_answers (
			approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
			n           INTEGER NOT NULL,
			answer      TEXT NOT NULL,
			PRIMARY KEY (approval_id, n)
		) WITHOUT ROWID`,

		`CREATE TABLE user_rules (
			id         TEXT PRIMARY KEY,
			position   INTEGER NOT NULL,
			rule       TEXT NOT NULL,
			origin     TEXT NOT NULL,
			created_by TEXT NOT NULL,
			created_at TEXT NOT NULL,
			expires_at TEXT NOT NULL
		)`,
		`CREATE INDEX user_rules_position ON user_rules (position)`,
		`CREATE TABLE counters (
			name  TEXT PRIMARY KEY,
			value INTEGER NOT NULL
		) WITHOUT ROWID`,
		`INSERT INTO counters (name, value) VALUES ('rules_version', 0)`,

		`CREATE TABLE state (
			ns    TEXT NOT NULL,
			key   TEXT NOT NULL,
			value TEXT NOT NULL,
			PRIMARY KEY (ns, key)
		) WITHOUT ROWID`,
	}},
	// Every audit record carries one of many live sessions, so the session
	// index took an insert at one of hundreds of scattered places per
	// record: about a third of the work of a durable append. Filtering by
	// session (a browsing filter) reads the records newest first instead.
	{Version: 2, Name: "audit: drop the session index", Stmts: []string{
		`DROP INDEX IF EXISTS audit_session`,
	}},
	// The audit log's seal (package audit): each record's sealing epoch and
	// its MAC under that epoch's key. Version 4, not 3, so that it does not
	// clash with a concurrent migration; versions need only increase.
	{Version: 4, Name: "audit: seal columns", Stmts: []string{
		`ALTER TABLE audit ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE audit ADD COLUMN tag TEXT NOT NULL DEFAULT ''`,
	}},
	// Paused agents (store.PauseStore). Version 15, after the issue that
	// brought it, so that concurrent migrations do not clash.
	{Version: 15, Name: "paused agents", Stmts: []string{
		`CREATE TABLE agent_pauses (
			agent  TEXT PRIMARY KEY,
			reason TEXT NOT NULL,
			by     TEXT NOT NULL,
			at     TEXT NOT NULL
		) WITHOUT ROWID`,
		`INSERT INTO counters (name, value) VALUES ('pauses_version', 0)`,
	}},
	// Hybrid controls: rate limits, budget caps (store.ControlStore).
	{Version: 16, Name: "hybrid controls", Stmts: []string{
		`CREATE TABLE controls (
			id         TEXT PRIMARY KEY,
			kind       TEXT NOT NULL,
			body       TEXT NOT NULL,
			created_by TEXT NOT NULL,
			created_at TEXT NOT NULL,
			updated_at TEXT NOT NULL
		) WITHOUT ROWID`,
		`INSERT INTO counters (name, value) VALUES ('controls_version', 0)`,
	}},
	// The type index took two inserts for every call (its action and
	// verdict records), at two places in the index, and so rewrote about
	// four of its pages at each commit of the audit log's writer: an
	// eighth of the pages a commit wrote under load. It now leaves out
	// the types every call writes: a query for them alone reads the
	// newest records first (half of them are actions), a window of time
	// from the time index, and the rest of the types come from it as
	// before (see auditSQL). Version 18, after the issue that brought it.
	{Version: 18, Name: "audit: type index without action and verdict records", Stmts: []string{
		`DROP INDEX IF EXISTS audit_type`,
		`CREATE INDEX audit_type ON audit (type, seq) WHERE type NOT IN ('action', 'verdict')`,
	}},
}

// commonTypes are the audit record types every call writes, which the
// type index leaves out (migration 18); notCommonType is its condition.
var commonTypes = map[string]bool{"action": true, "verdict": true}

const notCommonType = `type NOT IN ('action', 'verdict')`

// SchemaVersion is the schema version this program writes.
func SchemaVersion() int { return migrations[len(migrations)-1].Version }

// identifier is what Migrate accepts as the name of a version table.
var identifier = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Migrate brings the schema of the database behind db up to date with the
// history ms, recording the applied versions in table (created when
// missing). It applies the steps the database lacks in order, each in its own
// transaction; a failing step is rolled back whole. Every transaction re-reads
// what is applied, so processes opening the same new file at once apply each
// step exactly once, and a transaction that meets a lock SQLite's busy
// handler does not wait on is tried again for up to BusyTimeout.
//
// A database that records a version ms does not know was written by a newer
// program: Migrate refuses it with an error wrapping ErrSchemaTooNew that
// tells the user to upgrade. ms must be non-empty with increasing positive
// versions, and table a plain SQL identifier. db should run its transactions
// as BEGIN IMMEDIATE (see OpenPools), so that two migrating processes do not
// both read the versions before either writes.
func Migrate(ctx context.Context, db *sql.DB, table string, ms []Migration) error {
	_, err := migrate(ctx, db, table, ms)
	return err
}

// migrate is Migrate; it also reports whether it applied a step.
func migrate(ctx context.Context, db *sql.DB, table string, ms []Migration) (applied bool, err error) {
	if !identifier.MatchString(table) {
		return false, fmt.Errorf("sqlite: migrate: version table %q is not a plain identifier", table)
	}
	if len(ms) == 0 {
		return false, fmt.Errorf("sqlite: migrate: no migrations")
	}
	for i, m := range ms {
		if m.Version <= 0 || i > 0 && m.Version <= ms[i-1].Version {
			return false, fmt.Errorf("sqlite: migrate: migration %d (%s) is out of order", m.Version, m.Name)
		}
	}
	if upToDate(ctx, db, table, ms) {
		return false, nil
	}
	deadline := time.Now().Add(BusyTimeout)
	for {
		done, err := migrateOne(ctx, db, table, ms)
		if err != nil && isBusy(err) && time.Now().Before(deadline) {
			// Two processes opening a new database at once can meet a
			// lock that SQLite's busy handler does not wait on (the
			// switch to WAL, its recovery): try again shortly.
			select {
			case <-ctx.Done():
				return applied, ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return applied, err
		}
		if done {
			return applied, nil
		}
		applied = true
	}
}

// upToDate reports whether the database already records exactly the
// versions of ms, read without a write transaction: a process opening a
// database that needs no migration (every run of a hook) then takes no
// write lock and writes nothing. Any other answer, including an error (no
// version table yet), leaves the decision to migrateOne.
func upToDate(ctx context.Context, db *sql.DB, table string, ms []Migration) bool {
	rows, err := db.QueryContext(ctx, `SELECT version FROM "`+table+`" ORDER BY version`)
	if err != nil {
		return false
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil || i >= len(ms) || v != ms[i].Version {
			return false
		}
		i++
	}
	return rows.Err() == nil && i == len(ms)
}

// migrateOne applies the first missing step of ms and reports done when
// there was none. table has been checked to be an identifier.
func migrateOne(ctx context.Context, db *sql.DB, table string, ms []Migration) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS "`+table+`" (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", err)
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM "`+table+`" ORDER BY version`)
	if err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return false, fmt.Errorf("sqlite: migrate: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", err)
	}
	known := map[int]bool{}
	for _, m := range ms {
		known[m.Version] = true
	}
	for v := range applied {
		if !known[v] {
			return false, fmt.Errorf("%w: it has schema version %d, this program knows versions up to %d; upgrade the program",
				ErrSchemaTooNew, v, ms[len(ms)-1].Version)
		}
	}
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		for _, s := range m.Stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return false, fmt.Errorf("sqlite: migration %d (%s): %w", m.Version, m.Name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO "`+table+`" (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, fmtTime(time.Now())); err != nil {
			return false, fmt.Errorf("sqlite: migration %d (%s): %w", m.Version, m.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return false, fmt.Errorf("sqlite: migration %d (%s): %w", m.Version, m.Name, err)
		}
		return false, nil
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", err)
	}
	return true, nil
}

// isBusy reports whether err is SQLite's "database is locked" (SQLITE_BUSY).
func isBusy(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}
