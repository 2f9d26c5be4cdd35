package builtin

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/plugin"
)

// newDB creates a real SQLite file with a small staging table.
func newDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "staging.db")
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, note TEXT, version INTEGER NOT NULL DEFAULT 1)`,
		`INSERT INTO items (id, name, note) VALUES (1, 'apple', 'red'), (2, 'pear', NULL), (3, 'plum', 'tab	and
newline')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return dsn, db
}

func count(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM items`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSQLQuery(t *testing.T) {
	dsn, db := newDB(t)
	tl := newTools(t, Config{SQL: SQLConfig{DSN: dsn, MaxRows: 2}})
	tests := []struct {
		name    string
		args    map[string]any
		isError bool
		want    []string
	}{
		{"select", map[string]any{"query": "SELECT id, name FROM items WHERE id = 1"}, false, []string{"id\tname\n1\tapple\n", "(1 rows)"}},
		{"placeholders", map[string]any{"query": "SELECT name FROM items WHERE id = ?", "args": []any{json.Number("2")}}, false, []string{"pear"}},
		{"null and escapes", map[string]any{"query": "SELECT note FROM items WHERE id IN (2, 3) ORDER BY id"}, false, []string{"NULL", `tab\tand\nnewline`}},
		{"row cap", map[string]any{"query": "SELECT id FROM items ORDER BY id"}, false, []string{"1\n2\n", "only the first 2 rows"}},
		{"syntax error", map[string]any{"query": "SELEC 1"}, true, []string{"syntax"}},
		{"empty", map[string]any{"query": " "}, true, []string{"empty"}},
		{"a write is refused by the transaction", map[string]any{"query": "DELETE FROM items"}, true, []string{"read"}},
		{"a write in a CTE is refused too", map[string]any{"query": "WITH x AS (SELECT 1) UPDATE items SET name = 'x'"}, true, nil},
		{"unknown argument", map[string]any{"query": "SELECT 1", "limit": 1}, true, []string{"invalid arguments"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tl.Execute(context.Background(), plugin.Call{Tool: ToolSQLQuery, Args: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.isError {
				t.Fatalf("IsError = %v, want %v: %s", res.IsError, tc.isError, res.Output)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output %q lacks %q", res.Output, w)
				}
			}
		})
	}
	if n := count(t, db); n != 3 {
		t.Errorf("sql_query changed the table: %d rows, want 3", n)
	}
	t.Run("not configured", func(t *testing.T) {
		res, _ := newTools(t, Config{}).Execute(context.Background(), plugin.Call{Tool: ToolSQLQuery, Args: map[string]any{"query": "SELECT 1"}})
		if !res.IsError || !strings.Contains(res.Output, "no database is configured") {
			t.Errorf("result = %+v", res)
		}
	})
}

func TestSQLExec(t *testing.T) {
	dsn, db := newDB(t)
	tl := newTools(t, Config{SQL: SQLConfig{DSN: dsn}})
	exec := func(args map[string]any) plugin.Result {
		t.Helper()
		res, err := tl.Execute(context.Background(), plugin.Call{Tool: ToolSQLExec, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	version := func(id int) (int, string) {
		var v int
		var name string
		if err := db.QueryRow(`SELECT version, name FROM items WHERE id = ?`, id).Scan(&v, &name); err != nil {
			t.Fatal(err)
		}
		return v, name
	}
	t.Run("plain statement", func(t *testing.T) {
		res := exec(map[string]any{"sql": "UPDATE items SET note = ? WHERE id = ?", "args": []any{"ripe", json.Number("1")}})
		if res.IsError || !strings.Contains(res.Output, "1 rows affected") {
			t.Errorf("result = %+v", res)
		}
	})
	t.Run("optimistic update", func(t *testing.T) {
		res := exec(map[string]any{"table": "items", "id": json.Number("2"), "version": json.Number("1"), "set": map[string]any{"name": "nashi"}})
		if res.IsError {
			t.Fatalf("result = %+v", res)
		}
		if v, name := version(2); v != 2 || name != "nashi" {
			t.Errorf("row 2 = version %d name %q, want 2 nashi", v, name)
		}
	})
	t.Run("stale version is a conflict, no retry", func(t *testing.T) {
		res := exec(map[string]any{"table": "items", "id": json.Number("2"), "version": json.Number("1"), "set": map[string]any{"name": "stale"}})
		if !res.IsError || !strings.Contains(res.Output, "version conflict") {
			t.Fatalf("a stale update succeeded: %+v", res)
		}
		if v, name := version(2); v != 2 || name != "nashi" {
			t.Errorf("row 2 = version %d name %q, want it unchanged", v, name)
		}
	})
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"both forms", map[string]any{"sql": "DELETE FROM items", "table": "items"}},
		{"incomplete update", map[string]any{"table": "items", "id": json.Number("1")}},
		{"empty", map[string]any{}},
		{"bad version", map[string]any{"table": "items", "id": json.Number("1"), "version": json.Number("1.5"), "set": map[string]any{"name": "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := exec(tc.args); !res.IsError {
				t.Errorf("result = %+v, want an error", res)
			}
		})
	}
	if n := count(t, db); n != 3 {
		t.Errorf("%d rows, want 3", n)
	}
}
