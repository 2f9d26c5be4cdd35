package postgres

import (
	"context"
	"fmt"
	"time"
)

// migration is one step of the schema's history. Steps are never edited
// once released; a change is a new step with the next version.
type migration struct {
	version int
	name    string
	stmts   []string
}

// migrationTable records the versions of the schema a database has.
const migrationTable = "schema_migrations"

// migrations is the store's schema history, in order. Its tables are the
// SQLite store's, with times as Unix nanoseconds and an "ord" column where
// SQLite's rowid gave the order of insertion.
var migrations = []migration{
	{1, "initial schema", []string{
		`CREATE TABLE audit (
			seq       bigint PRIMARY KEY,
			time_ns   bigint NOT NULL,
			type      text NOT NULL,
			action_id text NOT NULL DEFAULT '',
			agent     text NOT NULL DEFAULT '',
			session   text NOT NULL DEFAULT '',
			tool      text NOT NULL DEFAULT '',
			data      text NOT NULL,
			prev_hash text NOT NULL,
			hash      text NOT NULL,
			epoch     bigint NOT NULL DEFAULT 0,
			tag       text NOT NULL DEFAULT ''
		)`,
		`CREATE INDEX audit_time ON audit (time_ns)`,
		`CREATE INDEX audit_type ON audit (type, seq)`,
		`CREATE INDEX audit_action ON audit (action_id, seq) WHERE action_id <> ''`,
		`CREATE INDEX audit_agent ON audit (agent, seq) WHERE agent <> ''`,
		`CREATE INDEX audit_tool ON audit (tool, seq) WHERE tool <> ''`,

		`CREATE TABLE approvals (
			id          text PRIMARY KEY,
			ord         bigserial NOT NULL,
			status      text NOT NULL,
			created_ns  bigint NOT NULL,
			deadline_ns bigint NOT NULL,
			args_hash   text NOT NULL,
			session     text NOT NULL,
			action_id   text NOT NULL,
			body        text NOT NULL,
			answer      text
		)`,
		`CREATE INDEX approvals_status ON approvals (status, created_ns)`,
		`CREATE INDEX approvals_args_hash ON approvals (args_hash, created_ns)`,
		`CREATE INDEX approvals_session ON approvals (session, created_ns)`,
		`CREATE TABLE approval_answers (
			approval_id text NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
			n           integer NOT NULL,
			answer      text NOT NULL,
			PRIMARY KEY (approval_id, n)
		)`,

		`CREATE TABLE user_rules (
			id         text PRIMARY KEY,
			ord        bigserial NOT NULL,
			position   bigint NOT NULL,
			rule       text NOT NULL,
			origin     text NOT NULL,
			created_by text NOT NULL,
			created_ns bigint NOT NULL,
			expires_ns bigint NOT NULL
		)`,
		`CREATE INDEX user_rules_position ON user_rules (position, ord)`,
		`CREATE TABLE counters (
			name  text PRIMARY KEY,
			value bigint NOT NULL
		)`,
		`INSERT INTO counters (name, value) VALUES ('rules_version', 0)`,

		`CREATE TABLE state (
			ns    text NOT NULL,
			key   text NOT NULL,
			value text NOT NULL,
			PRIMARY KEY (ns, key)
		)`,
	}},
	migration2, // controls.go
	migration3, // statekey.go
	migration4, // statekey.go
	// Changes no table: from it on, every instance records the uses of
	// approvals and the acceptances of MCP definitions in the audit log, and
	// reads them from there (an instance that does not would use an approval
	// again once its mark is deleted, and write pins the others withhold),
	// so an older instance must not start on the database.
	{5, "uses and pin acceptances recorded in the audit log", nil},
}

// SchemaVersion is the schema version this program writes.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrate applies the steps the database lacks, each in its own
// transaction under the migration lock (so that instances starting at once
// apply each exactly once), and refuses a database with a version this
// program does not know.
func (d *DB) migrate(ctx context.Context) error {
	for {
		done, err := d.migrateOne(ctx)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

func (d *DB) migrateOne(ctx context.Context) (done bool, err error) {
	err = d.write(ctx, "migrate", func(tx *tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, lockClass, migrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrationTable+` (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL
		)`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version FROM `+migrationTable)
		if err != nil {
			return err
		}
		applied, err := collectInts(rows, nil)
		if err != nil {
			return err
		}
		have := map[int]bool{}
		for _, v := range applied {
			have[v] = true
		}
		known := map[int]bool{}
		for _, m := range migrations {
			known[m.version] = true
		}
		for v := range have {
			if !known[v] {
				return fmt.Errorf("%w: it has schema version %d, this program knows versions up to %d; upgrade the program",
					ErrSchemaTooNew, v, SchemaVersion())
			}
		}
		for _, m := range migrations {
			if have[m.version] {
				continue
			}
			for _, s := range m.stmts {
				if _, err := tx.Exec(ctx, s); err != nil {
					return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
				}
			}
			_, err := tx.Exec(ctx, `INSERT INTO `+migrationTable+` (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, time.Now())
			return err
		}
		done = true
		return nil
	})
	return done, err
}
