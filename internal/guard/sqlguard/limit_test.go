package sqlguard

import (
	"context"
	"errors"
	"testing"
)

func TestForceLimit(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		n    int
		want string
	}{
		{"append", "SELECT * FROM users", 10, "SELECT * FROM users\nLIMIT 10"},
		{"append drops semicolon", "SELECT * FROM users;", 10, "SELECT * FROM users\nLIMIT 10"},
		{"append after trailing comment", "SELECT 1 -- note", 5, "SELECT 1 -- note\nLIMIT 5"},
		{"append after offset", "SELECT * FROM users ORDER BY id OFFSET 20", 5, "SELECT * FROM users ORDER BY id OFFSET 20\nLIMIT 5"},
		{"append to union", "SELECT 1 UNION SELECT 2", 1, "SELECT 1 UNION SELECT 2\nLIMIT 1"},
		{"append to values", "VALUES (1), (2)", 1, "VALUES (1), (2)\nLIMIT 1"},
		{"lower limit kept", "SELECT * FROM users LIMIT 3", 10, "SELECT * FROM users LIMIT 3"},
		{"equal limit kept", "SELECT * FROM users LIMIT 10", 10, "SELECT * FROM users LIMIT 10"},
		{"zero limit kept", "SELECT * FROM users LIMIT 0", 10, "SELECT * FROM users LIMIT 0"},
		{"higher limit clamped", "SELECT * FROM users LIMIT 100000", 10, "SELECT * FROM users LIMIT 10"},
		{"fetch first clamped", "SELECT * FROM users FETCH FIRST 500 ROWS ONLY", 10, "SELECT * FROM users FETCH FIRST 10 ROWS ONLY"},
		{"underscore literal clamped", "SELECT 1 LIMIT 1_000", 10, "SELECT 1 LIMIT 10"},
		{"hex literal clamped", "SELECT 1 LIMIT 0x100", 10, "SELECT 1 LIMIT 10"},
		{"parenthesised clamped", "(SELECT 1 LIMIT 99)", 10, "(SELECT 1 LIMIT 10)"},
		{"parameter wrapped", "SELECT * FROM users LIMIT $1", 10, "SELECT * FROM (\nSELECT * FROM users LIMIT $1\n) AS overseer_limited LIMIT 10"},
		{"limit all wrapped", "SELECT * FROM users LIMIT ALL", 10, "SELECT * FROM (\nSELECT * FROM users LIMIT ALL\n) AS overseer_limited LIMIT 10"},
		{"expression wrapped", "SELECT * FROM users LIMIT 5 + 5", 3, "SELECT * FROM (\nSELECT * FROM users LIMIT 5 + 5\n) AS overseer_limited LIMIT 3"},
		{"with ties wrapped", "SELECT * FROM users ORDER BY a FETCH FIRST 5 ROWS WITH TIES", 3,
			"SELECT * FROM (\nSELECT * FROM users ORDER BY a FETCH FIRST 5 ROWS WITH TIES\n) AS overseer_limited LIMIT 3"},
		{"parenthesised parameter wrapped", "(SELECT 1 LIMIT $1)", 2, "SELECT * FROM (\n(SELECT 1 LIMIT $1)\n) AS overseer_limited LIMIT 2"},
		{"show unchanged", "SHOW search_path", 10, "SHOW search_path"},
		{"explain unchanged", "EXPLAIN SELECT * FROM users", 10, "EXPLAIN SELECT * FROM users"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ForceLimit(tt.sql, tt.n)
			if err != nil {
				t.Fatalf("ForceLimit: %v", err)
			}
			if got != tt.want {
				t.Fatalf("ForceLimit(%q, %d) =\n%q\nwant\n%q", tt.sql, tt.n, got, tt.want)
			}
			if c, err := Classify(got); c != Read || err != nil {
				t.Fatalf("result classifies as %s, %v", c, err)
			}
		})
	}
}

func TestForceLimitRefuses(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		n    int
		want error
	}{
		{"write", "DELETE FROM users", 10, ErrNotRead},
		{"write cte", "WITH d AS (DELETE FROM users RETURNING *) SELECT * FROM d", 10, ErrNotRead},
		{"two statements", "SELECT 1; SELECT 2", 10, ErrNotRead},
		{"for update", "SELECT * FROM users FOR UPDATE", 10, ErrNotRead},
		{"unparseable", "SELEC 1", 10, ErrParse},
		{"empty", "", 10, ErrEmpty},
		{"zero limit", "SELECT 1", 0, ErrBadLimit},
		{"negative limit", "SELECT 1", -5, ErrBadLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ForceLimit(tt.sql, tt.n)
			if !errors.Is(err, tt.want) || got != "" {
				t.Fatalf("ForceLimit = %q, %v; want error %v", got, err, tt.want)
			}
		})
	}
}

// TestForceLimitOnSQLite runs limited queries on a real database.
func TestForceLimitOnSQLite(t *testing.T) {
	db, _ := openDB(t)
	for _, q := range []string{
		"SELECT * FROM users ORDER BY id",
		"SELECT * FROM users ORDER BY id LIMIT 100",
		"SELECT * FROM users ORDER BY id LIMIT ?",
	} {
		t.Run(q, func(t *testing.T) {
			limited, err := ForceLimit(q, 2)
			if err != nil {
				// "?" is not PostgreSQL; such text is not judged.
				if q == "SELECT * FROM users ORDER BY id LIMIT ?" && errors.Is(err, ErrParse) {
					return
				}
				t.Fatal(err)
			}
			res, err := RunReadOnly(context.Background(), db, limited)
			if err != nil {
				t.Fatalf("%q: %v", limited, err)
			}
			if len(res.Rows) != 2 || res.Rows[0][0] != int64(1) {
				t.Fatalf("%q returned %v", limited, res.Rows)
			}
		})
	}
}
