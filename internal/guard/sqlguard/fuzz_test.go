package sqlguard

import (
	"errors"
	"os"
	"testing"
	"time"
)

// FuzzClassify: Classify never panics; an error always comes with Unknown;
// text that does not parse is never Read; a Read is exactly one statement;
// and ForceLimit of a Read is again a Read.
func FuzzClassify(f *testing.F) {
	for _, c := range loadQueries(f) {
		f.Add(c.query)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		a, err := Analyze(sql)
		if err != nil {
			if a.Class != Unknown {
				t.Fatalf("Analyze(%q) = %s with error %v", sql, a.Class, err)
			}
			if errors.Is(err, ErrParser) {
				t.Fatalf("Analyze(%q): the parser failed: %v", sql, err)
			}
			return
		}
		if a.Class != Read {
			if len(a.Reasons) == 0 {
				t.Fatalf("Analyze(%q) = %s without a reason", sql, a.Class)
			}
			return
		}
		if len(a.Statements) != 1 {
			t.Fatalf("Analyze(%q) = read with statements %q", sql, a.Statements)
		}
		for _, s := range a.Statements {
			if s != "SELECT" && s != "SHOW" && s != "EXPLAIN" {
				t.Fatalf("Analyze(%q) = read with statement %q", sql, s)
			}
		}
		limited, err := ForceLimit(sql, 7)
		if err != nil {
			if !errors.Is(err, ErrNotRead) && !errors.Is(err, ErrTooComplex) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("ForceLimit(%q): %v", sql, err)
			}
			return
		}
		if c, err := Classify(limited); c != Read || err != nil {
			t.Fatalf("ForceLimit(%q) = %q, which is %s (%v)", sql, limited, c, err)
		}
	})
}

var sink Class

// BenchmarkClassify measures classification once the parser is loaded.
func BenchmarkClassify(b *testing.B) {
	if err := Warm(); err != nil {
		b.Fatal(err)
	}
	queries := map[string]string{
		"select1":   "SELECT 1",
		"join":      "SELECT u.name, count(o.id) FROM public.users u LEFT JOIN orders o ON o.user_id = u.id WHERE u.active GROUP BY u.name ORDER BY 2 DESC LIMIT 10",
		"cte-write": "WITH x AS (DELETE FROM users WHERE id IN (SELECT id FROM stale) RETURNING *) SELECT * FROM x",
	}
	for name, q := range queries {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				c, _ := Classify(q)
				sink = c
			}
		})
	}
	b.Run("report", func(b *testing.B) {
		q := mustRead(b, "testdata/realistic/report.sql")
		for b.Loop() {
			c, _ := Classify(q)
			sink = c
		}
	})
}

// TestWarmLoadTime loads the parser (if no earlier test did) and reports how
// long the first load took; the figure is informational, not asserted.
func TestWarmLoadTime(t *testing.T) {
	start := time.Now()
	if err := Warm(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Warm took %v (the first call in a process pays the parser load)", time.Since(start))
	if c, err := Classify("SELECT 1"); c != Read || err != nil {
		t.Fatalf("after Warm, Classify = %s, %v", c, err)
	}
}

func mustRead(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
