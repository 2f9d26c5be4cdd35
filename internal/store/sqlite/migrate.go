package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// migration is one step of the schema's history. Steps are never edited once
// released; a change is a new step with the next version.
type migration struct {
	version int
	name    string
	stmts   []string
}

// migrations is the schema's history, in order. Versions start at 1 and
// increase by one.
var migrations = []migration{
	{version: 1, name: "initial schema", stmts: []string{
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
}

// SchemaVersion is the schema version this program writes.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrate applies the steps of ms that the database lacks, in order, each in
// its own write transaction. Every transaction re-reads what is applied, so
// processes opening the same new file at once apply each step exactly once.
func migrate(ctx context.Context, db *sql.DB, ms []migration) error {
	deadline := time.Now().Add(BusyTimeout)
	for {
		done, err := migrateOne(ctx, db, ms)
		if err != nil && isBusy(err) && time.Now().Before(deadline) {
			// Two processes opening a new database at once can meet a
			// lock that SQLite's busy handler does not wait on (the
			// switch to WAL, its recovery): try again shortly.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

// migrateOne applies the first missing step of ms and reports done when
// there was none.
func migrateOne(ctx context.Context, db *sql.DB, ms []migration) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	)`); err != nil {
		return false, fmt.Errorf("sqlite: migrate: %w", err)
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
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
		known[m.version] = true
	}
	for v := range applied {
		if !known[v] {
			return false, fmt.Errorf("%w: it has schema version %d, this program knows versions up to %d; upgrade the program",
				ErrSchemaTooNew, v, ms[len(ms)-1].version)
		}
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		for _, s := range m.stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return false, fmt.Errorf("sqlite: migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, fmtTime(time.Now())); err != nil {
			return false, fmt.Errorf("sqlite: migration %d (%s): %w", m.version, m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return false, fmt.Errorf("sqlite: migration %d (%s): %w", m.version, m.name, err)
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
