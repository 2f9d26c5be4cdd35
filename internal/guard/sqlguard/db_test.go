package sqlguard

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	_ "modernc.org/sqlite"
)

// openDB opens a real SQLite file in a temp dir with a users table.
func openDB(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "test.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, admin INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 1)`,
		`INSERT INTO users (id, name) VALUES (1, 'ada'), (2, 'bob'), (3, 'cy')`,
		`CREATE TABLE tags (id INTEGER, tag TEXT, version INTEGER NOT NULL DEFAULT 1)`,
		`INSERT INTO tags (id, tag) VALUES (7, 'a'), (7, 'b')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return db, dir
}

// snapshot is what a write could change.
type snapshot struct {
	users       string
	tables      string
	userVersion int64
}

func takeSnapshot(t *testing.T, db *sql.DB) snapshot {
	t.Helper()
	var s snapshot
	q := func(query string, dst any) {
		if err := db.QueryRow(query).Scan(dst); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	q(`SELECT group_concat(id || ':' || name || ':' || admin || ':' || version, ',') FROM (SELECT * FROM users ORDER BY id)`, &s.users)
	q(`SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema ORDER BY name)`, &s.tables)
	q(`PRAGMA user_version`, &s.userVersion)
	return s
}

func TestRunReadOnlyReads(t *testing.T) {
	db, _ := openDB(t)
	ctx := context.Background()
	t.Run("rows and columns", func(t *testing.T) {
		res, err := RunReadOnly(ctx, db, "SELECT id, name FROM users WHERE id >= ? ORDER BY id", 2)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Columns, []string{"id", "name"}) || len(res.Rows) != 2 || res.Truncated {
			t.Fatalf("result = %+v", res)
		}
		if res.Rows[0][0] != int64(2) || res.Rows[1][1] != "cy" {
			t.Fatalf("rows = %v", res.Rows)
		}
	})
	t.Run("row cap", func(t *testing.T) {
		res, err := RunReadOnlyMax(ctx, db, 2, "SELECT id FROM users ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 2 || !res.Truncated {
			t.Fatalf("result = %+v, want 2 rows, truncated", res)
		}
	})
	t.Run("exact cap is not truncated", func(t *testing.T) {
		res, err := RunReadOnlyMax(ctx, db, 3, "SELECT id FROM users")
		if err != nil || len(res.Rows) != 3 || res.Truncated {
			t.Fatalf("result = %+v, %v", res, err)
		}
	})
	t.Run("query error", func(t *testing.T) {
		if _, err := RunReadOnly(ctx, db, "SELECT nope FROM users"); err == nil {
			t.Fatal("bad query succeeded")
		}
	})
}

// TestRunReadOnlyRefusesWrites proves the database refuses writes inside
// RunReadOnly even when the classifier is not consulted at all.
func TestRunReadOnlyRefusesWrites(t *testing.T) {
	db, dir := openDB(t)
	db.SetMaxOpenConns(1) // every call shares one connection: its state must be reset
	ctx := context.Background()
	before := takeSnapshot(t, db)
	vacuumFile := filepath.Join(dir, "copy.db")
	attachFile := filepath.Join(dir, "other.db")
	writes := []struct{ name, query string }{
		{"insert", "INSERT INTO users (name) VALUES ('mallory')"},
		{"insert returning", "INSERT INTO users (name) VALUES ('mallory') RETURNING id"},
		{"update", "UPDATE users SET admin = 1"},
		{"update returning", "UPDATE users SET admin = 1 RETURNING id"},
		{"delete", "DELETE FROM users"},
		{"delete returning", "DELETE FROM users RETURNING *"},
		{"with delete", "WITH x AS (SELECT 1) DELETE FROM users"},
		{"create table", "CREATE TABLE evil (x)"},
		{"create temp table", "CREATE TEMP TABLE evil (x)"},
		{"drop table", "DROP TABLE users"},
		{"alter table", "ALTER TABLE users ADD COLUMN x"},
		{"create index", "CREATE INDEX evil ON users(name)"},
		{"pragma write", "PRAGMA user_version = 42"},
		{"read then write", "SELECT 1; DELETE FROM users"},
		{"vacuum into", "VACUUM INTO '" + vacuumFile + "'"},
		{"attach and create", "ATTACH DATABASE '" + attachFile + "' AS other; CREATE TABLE other.t (x)"},
		{"replace", "REPLACE INTO users (id, name) VALUES (1, 'x')"},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			res, err := RunReadOnly(ctx, db, w.query)
			if after := takeSnapshot(t, db); after != before {
				t.Fatalf("database changed: %+v -> %+v (result %+v, err %v)", before, after, res, err)
			}
			if err == nil {
				// SQLite ran nothing that wrote; a read-only driver may still
				// accept the text. The state check above is what matters, but a
				// write statement should not have succeeded.
				t.Fatalf("write %q returned no error (result %+v)", w.query, res)
			}
		})
	}
	for _, f := range []string{vacuumFile, attachFile} {
		if st, err := os.Stat(f); err == nil && st.Size() > 0 {
			t.Errorf("%s was written (%d bytes)", f, st.Size())
		}
	}
	// The shared connection is writable again for ordinary use.
	if _, err := db.Exec("UPDATE users SET name = 'ada2' WHERE id = 1"); err != nil {
		t.Fatalf("connection left read-only: %v", err)
	}
}

// otherDriver is a database/sql driver that is neither SQLite nor
// PostgreSQL; it never opens a connection.
type otherDriver struct{}

func (otherDriver) Open(string) (driver.Conn, error) { return nil, errors.New("not a real database") }

func init() { sql.Register("sqlguard-test-other", otherDriver{}) }

func TestUnsupportedDriverFailsClosed(t *testing.T) {
	db, err := sql.Open("sqlguard-test-other", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := RunReadOnly(ctx, db, "SELECT 1"); !errors.Is(err, ErrUnsupportedDriver) {
		t.Fatalf("RunReadOnly = %v, want ErrUnsupportedDriver", err)
	}
	if err := ExecCAS(ctx, db, "t", "id", "version", 1, 1, map[string]any{"a": 1}); !errors.Is(err, ErrUnsupportedDriver) {
		t.Fatalf("ExecCAS = %v, want ErrUnsupportedDriver", err)
	}
}

func TestExecCAS(t *testing.T) {
	ctx := context.Background()
	t.Run("success bumps the version", func(t *testing.T) {
		db, _ := openDB(t)
		if err := ExecCAS(ctx, db, "users", "id", "version", 1, 1, map[string]any{"name": "ada l.", "admin": 1}); err != nil {
			t.Fatal(err)
		}
		var name string
		var admin, version int64
		if err := db.QueryRow("SELECT name, admin, version FROM users WHERE id = 1").Scan(&name, &admin, &version); err != nil {
			t.Fatal(err)
		}
		if name != "ada l." || admin != 1 || version != 2 {
			t.Fatalf("row = %q %d %d", name, admin, version)
		}
		// The old version is now stale.
		err := ExecCAS(ctx, db, "users", "id", "version", 1, 1, map[string]any{"name": "again"})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("stale write = %v, want ErrConflict", err)
		}
		if err := db.QueryRow("SELECT name FROM users WHERE id = 1").Scan(&name); err != nil || name != "ada l." {
			t.Fatalf("stale write changed the row: %q %v", name, err)
		}
	})
	t.Run("missing row conflicts", func(t *testing.T) {
		db, _ := openDB(t)
		if err := ExecCAS(ctx, db, "users", "id", "version", 99, 1, map[string]any{"name": "x"}); !errors.Is(err, ErrConflict) {
			t.Fatalf("ExecCAS = %v, want ErrConflict", err)
		}
	})
	t.Run("non-unique id writes nothing", func(t *testing.T) {
		db, _ := openDB(t)
		err := ExecCAS(ctx, db, "tags", "id", "version", 7, 1, map[string]any{"tag": "z"})
		if !errors.Is(err, ErrNotUnique) {
			t.Fatalf("ExecCAS = %v, want ErrNotUnique", err)
		}
		var n int
		if err := db.QueryRow("SELECT count(*) FROM tags WHERE tag = 'z'").Scan(&n); err != nil || n != 0 {
			t.Fatalf("rows written: %d, %v", n, err)
		}
	})
	t.Run("concurrent writers: exactly one wins", func(t *testing.T) {
		db, _ := openDB(t)
		const writers = 8
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = ExecCAS(ctx, db, "users", "id", "version", 2, 1, map[string]any{"name": "w"})
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, ErrConflict):
				t.Fatalf("unexpected error: %v", err)
			}
		}
		var version int64
		if err := db.QueryRow("SELECT version FROM users WHERE id = 2").Scan(&version); err != nil {
			t.Fatal(err)
		}
		if wins != 1 || version != 2 {
			t.Fatalf("%d writers won, version %d; want 1 and 2", wins, version)
		}
	})
	bad := []struct {
		name                  string
		table, idCol, version string
		set                   map[string]any
	}{
		{"injected table", "users; DROP TABLE users", "id", "version", map[string]any{"name": "x"}},
		{"quoted table", `users"`, "id", "version", map[string]any{"name": "x"}},
		{"three-part table", "a.b.c", "id", "version", map[string]any{"name": "x"}},
		{"bad id column", "users", "id = id OR 1", "version", map[string]any{"name": "x"}},
		{"bad set column", "users", "id", "version", map[string]any{"name = 'x', admin": 1}},
		{"sets the version", "users", "id", "version", map[string]any{"VERSION": 5}},
		{"sets the id", "users", "id", "version", map[string]any{"id": 5}},
		{"id is version", "users", "version", "version", map[string]any{"name": "x"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			db, _ := openDB(t)
			before := takeSnapshot(t, db)
			err := ExecCAS(ctx, db, tt.table, tt.idCol, tt.version, 1, 1, tt.set)
			if !errors.Is(err, ErrIdentifier) {
				t.Fatalf("ExecCAS = %v, want ErrIdentifier", err)
			}
			if takeSnapshot(t, db) != before {
				t.Fatal("database changed")
			}
		})
	}
	t.Run("empty set", func(t *testing.T) {
		db, _ := openDB(t)
		if err := ExecCAS(ctx, db, "users", "id", "version", 1, 1, nil); err == nil {
			t.Fatal("empty set accepted")
		}
	})
}

func TestCASStatement(t *testing.T) {
	tests := []struct {
		name string
		d    dialect
		want string
	}{
		{"sqlite", dialectSQLite, `UPDATE "app"."users" SET "a" = ?, "b" = ?, "version" = "version" + 1 WHERE "id" = ? AND "version" = ?`},
		{"postgres", dialectPostgres, `UPDATE "app"."users" SET "a" = $1, "b" = $2, "version" = "version" + 1 WHERE "id" = $3 AND "version" = $4`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, args, err := casStatement(tt.d, "app.users", "id", "version", 9, 3, map[string]any{"b": 2, "a": 1})
			if err != nil {
				t.Fatal(err)
			}
			if q != tt.want || !slices.Equal(args, []any{1, 2, 9, int64(3)}) {
				t.Fatalf("got %s %v", q, args)
			}
			// The statement is itself a single write to the classifier.
			if tt.d == dialectPostgres {
				if c, err := Classify(q); c != Write || err != nil {
					t.Fatalf("Classify = %s, %v", c, err)
				}
			}
		})
	}
}
