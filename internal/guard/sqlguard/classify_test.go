package sqlguard

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

type queryCase struct {
	line  int
	read  bool
	class string
	query string
}

// loadQueries reads testdata/queries.tsv: read|block<TAB>class<TAB>query, the
// query with Go escapes (\n, \t, \x00, \\).
func loadQueries(tb testing.TB) []queryCase {
	tb.Helper()
	f, err := os.Open("testdata/queries.tsv")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []queryCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		cols := strings.SplitN(line, "\t", 3)
		if len(cols) != 3 || (cols[0] != "read" && cols[0] != "block") {
			tb.Fatalf("queries.tsv:%d: want read|block<TAB>class<TAB>query, got %q", n, line)
		}
		q, err := strconv.Unquote(`"` + strings.ReplaceAll(cols[2], `"`, `\"`) + `"`)
		if err != nil {
			tb.Fatalf("queries.tsv:%d: bad escape in %q: %v", n, cols[2], err)
		}
		out = append(out, queryCase{line: n, read: cols[0] == "read", class: cols[1], query: q})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestQueriesCorpus(t *testing.T) {
	cases := loadQueries(t)
	if len(cases) < 60 {
		t.Fatalf("corpus has %d queries, want at least 60", len(cases))
	}
	seen := map[string]int{}
	for _, c := range cases {
		seen[c.class]++
		name := c.query
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			a, err := Analyze(c.query)
			if got := a.Class.String(); got != c.class {
				t.Fatalf("queries.tsv:%d: Analyze(%q) = %s (%v, reasons %q), want %s", c.line, c.query, got, err, a.Reasons, c.class)
			}
			if c.read != (a.Class == Read) {
				t.Fatalf("queries.tsv:%d: read = %v, want %v", c.line, a.Class == Read, c.read)
			}
			if a.Class != Read && len(a.Reasons) == 0 {
				t.Fatalf("queries.tsv:%d: class %s without a reason", c.line, a.Class)
			}
			if a.Class == Read && len(a.Reasons) != 0 {
				t.Fatalf("queries.tsv:%d: read with reasons %q", c.line, a.Reasons)
			}
			if err != nil && a.Class != Unknown {
				t.Fatalf("queries.tsv:%d: error %v with class %s", c.line, err, a.Class)
			}
			if cl, cerr := Classify(c.query); cl != a.Class || (cerr == nil) != (err == nil) {
				t.Fatalf("Classify = %s, %v; Analyze = %s, %v", cl, cerr, a.Class, err)
			}
		})
	}
	for _, class := range []string{"read", "write", "ddl", "admin", "multiple", "unknown"} {
		if seen[class] == 0 {
			t.Errorf("corpus has no %s query", class)
		}
	}
}

func TestAnalyzeDetails(t *testing.T) {
	tests := []struct {
		name       string
		sql        string
		statements []string
		tables     []string
		reason     string // substring of one reason, "" for none
	}{
		{"join", "SELECT * FROM public.users u JOIN orders o ON o.uid = u.id", []string{"SELECT"}, []string{"orders", "public.users"}, ""},
		{"cte names are not tables", "WITH x AS (SELECT * FROM users) SELECT * FROM x", []string{"SELECT"}, []string{"users"}, ""},
		{"recursive cte", "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n+1 FROM r) SELECT * FROM r", []string{"SELECT"}, nil, ""},
		{"non-recursive cte shadowing a table", "WITH t AS (SELECT * FROM t) SELECT * FROM t", []string{"SELECT"}, []string{"t"}, ""},
		{"cte out of scope", "SELECT * FROM secret UNION ALL (WITH secret AS (SELECT 1) SELECT * FROM secret)", []string{"SELECT"}, []string{"secret"}, ""},
		{"later cte not visible to earlier", "WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", []string{"SELECT"}, []string{"b"}, ""},
		{"qualified name is never a cte", "WITH users AS (SELECT 1) SELECT * FROM public.users", []string{"SELECT"}, []string{"public.users"}, ""},
		{"subquery tables", "SELECT (SELECT max(id) FROM a) FROM b WHERE x IN (SELECT y FROM c)", []string{"SELECT"}, []string{"a", "b", "c"}, ""},
		{"catalog", "SELECT * FROM db.s.t", []string{"SELECT"}, []string{"db.s.t"}, ""},
		{"write cte", "WITH d AS (DELETE FROM users RETURNING id) SELECT * FROM d", []string{"SELECT"}, []string{"users"}, "DELETE inside another statement"},
		{"insert target", "INSERT INTO audit.log SELECT * FROM events", []string{"INSERT"}, []string{"audit.log", "events"}, "INSERT statement"},
		{"select into", "SELECT * INTO copy FROM users", []string{"SELECT"}, []string{"copy", "users"}, "SELECT … INTO"},
		{"function", "SELECT nextval('s')", []string{"SELECT"}, nil, "function nextval"},
		{"multiple", "SELECT 1; DROP TABLE users", []string{"SELECT", "DROP"}, nil, "2 statements"},
		{"alter", "ALTER TABLE users ADD x int", []string{"ALTER TABLE"}, []string{"users"}, "ALTER TABLE statement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Analyze(tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Statements, tt.statements) {
				t.Errorf("Statements = %q, want %q", a.Statements, tt.statements)
			}
			if !slices.Equal(a.Tables, tt.tables) {
				t.Errorf("Tables = %q, want %q", a.Tables, tt.tables)
			}
			if tt.reason == "" && len(a.Reasons) > 0 {
				t.Errorf("Reasons = %q, want none", a.Reasons)
			}
			if tt.reason != "" && !slices.ContainsFunc(a.Reasons, func(r string) bool { return strings.Contains(r, tt.reason) }) {
				t.Errorf("Reasons = %q, want one containing %q", a.Reasons, tt.reason)
			}
		})
	}
}

func TestAnalyzeErrors(t *testing.T) {
	tests := []struct {
		name string
		sql  string
		want error
	}{
		{"empty", "", ErrEmpty},
		{"blank", "  \n\t ", ErrEmpty},
		{"comment", "/* nothing */", ErrEmpty},
		{"syntax", "SELEKT 1", ErrParse},
		{"nul byte", "SELECT 1\x00; DROP TABLE t", ErrEncoding},
		{"invalid utf-8", "SELECT '\xff'", ErrEncoding},
		{"too large", "SELECT " + strings.Repeat("1+", MaxSQLBytes/2) + "1", ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Analyze(tt.sql)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Analyze = %v, want %v", err, tt.want)
			}
			if a.Class != Unknown || a.Strictest != Unknown {
				t.Fatalf("class = %s/%s, want unknown", a.Class, a.Strictest)
			}
		})
	}
}

func TestDeepNestingIsNotRead(t *testing.T) {
	for _, depth := range []int{300, 5000, 100000} {
		sql := strings.Repeat("SELECT (", depth) + "1" + strings.Repeat(")", depth)
		c, err := Classify(sql)
		if c != Unknown || !errors.Is(err, ErrTooComplex) {
			t.Fatalf("depth %d: Classify = %s, %v; want unknown, ErrTooComplex", depth, c, err)
		}
	}
	// The parser still works afterwards.
	if c, err := Classify("SELECT 1"); c != Read || err != nil {
		t.Fatalf("Classify after deep input = %s, %v", c, err)
	}
}

func TestClassString(t *testing.T) {
	for c, want := range map[Class]string{Unknown: "unknown", Read: "read", Write: "write", DDL: "ddl", Admin: "admin", Multiple: "multiple", Class(99): "class(99)"} {
		if got := c.String(); got != want {
			t.Errorf("Class(%d).String() = %q, want %q", c, got, want)
		}
	}
	var zero Class
	if zero != Unknown {
		t.Fatal("the zero Class must be Unknown")
	}
}
