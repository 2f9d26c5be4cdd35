package memsqlite

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
	{version: 1, name: "memories with a trigram full-text index", stmts: []string{
		// tags is a JSON array of strings; key is NULL when the item has
		// none (NULLs never collide in a UNIQUE column); created_at is
		// fixed-width UTC text (see timeFormat), so it sorts as time.
		`CREATE TABLE memories (
			id         INTEGER PRIMARY KEY,
			category   TEXT NOT NULL,
			content    TEXT NOT NULL,
			tags       TEXT NOT NULL DEFAULT '[]',
			key        TEXT UNIQUE,
			source     TEXT NOT NULL DEFAULT '',
			created_at TEXT NOT NULL
		)`,
		`CREATE INDEX memories_created ON memories (created_at, id)`,
		`CREATE INDEX memories_category ON memories (category, created_at, id)`,
		// An external-content index: it stores only the trigrams, the text
		// stays in memories. The triggers keep the two in step inside the
		// writing transaction.
		`CREATE VIRTUAL TABLE memories_fts USING fts5(
			content, tags,
			content = 'memories', content_rowid = 'id',
			tokenize = 'trigram'
		)`,
		`CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
			INSERT INTO memories_fts (rowid, content, tags) VALUES (new.id, new.content, new.tags);
		END`,
		`CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
			INSERT INTO memories_fts (memories_fts, rowid, content, tags) VALUES ('delete', old.id, old.content, old.tags);
		END`,
		`CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
			INSERT INTO memories_fts (memories_fts, rowid, content, tags) VALUES ('delete', old.id, old.content, old.tags);
			INSERT INTO memories_fts (rowid, content, tags) VALUES (new.id, new.content, new.tags);
		END`,
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
			// Two processes opening a new file at once can meet a lock
			// that SQLite's busy handler does not wait on (the switch to
			// WAL, its recovery): try again shortly.
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
		return false, fmt.Errorf("memsqlite: migrate: %w", err)
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
		return false, fmt.Errorf("memsqlite: migrate: %w", err)
	}
	applied := map[int]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return false, fmt.Errorf("memsqlite: migrate: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return false, fmt.Errorf("memsqlite: migrate: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("memsqlite: migrate: %w", err)
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
				return false, fmt.Errorf("memsqlite: migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, fmtTime(time.Now())); err != nil {
			return false, fmt.Errorf("memsqlite: migration %d (%s): %w", m.version, m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return false, fmt.Errorf("memsqlite: migration %d (%s): %w", m.version, m.name, err)
		}
		return false, nil
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("memsqlite: migrate: %w", err)
	}
	return true, nil
}

// isBusy reports whether err is SQLite's "database is locked" (SQLITE_BUSY).
func isBusy(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked")
}
