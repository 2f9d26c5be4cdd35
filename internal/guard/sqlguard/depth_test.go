package sqlguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pgparser "github.com/overseer-dev/overseer/internal/guard/sqlguard/pgquery"
)

// nestedConstruct builds SQL nesting one construct n times. failAt is the
// smallest n at which the parser overran its stack when probed (hang, trap or
// corrupted later results), measured with TestProbeParserStack.
type nestedConstruct struct {
	name   string
	gen    func(n int) string
	failAt int
}

var rep = strings.Repeat

var nestedConstructs = []nestedConstruct{
	{"not", func(n int) string { return "SELECT " + rep("NOT ", n) + "x" }, 655},
	{"unary minus", func(n int) string { return "SELECT " + rep("- ", n) + "x" }, 655},
	{"unary op", func(n int) string { return "SELECT " + rep("@ ", n) + "x" }, 655},
	{"plus", func(n int) string { return "SELECT x" + rep("+x", n) }, 655},
	{"concat", func(n int) string { return "SELECT x" + rep("||x", n) }, 655},
	{"json arrow", func(n int) string { return "SELECT x" + rep("->'a'", n) }, 655},
	{"collate", func(n int) string { return "SELECT x" + rep(` COLLATE "C"`, n) }, 721},
	{"cast", func(n int) string { return "SELECT x" + rep("::int", n) }, 721},
	{"is not null", func(n int) string { return "SELECT x" + rep(" IS NOT NULL", n) }, 540},
	{"at time zone", func(n int) string { return "SELECT x" + rep(" AT TIME ZONE 'UTC'", n) }, 404},
	{"in list", func(n int) string { return "SELECT x" + rep(" IN (1)", n) }, 655},
	{"join", func(n int) string { return "SELECT * FROM t0" + rep(" JOIN t ON true", n) }, 540},
	{"natural join", func(n int) string { return "SELECT * FROM t" + rep(" NATURAL JOIN t", n) }, 540},
	{"case", func(n int) string { return "SELECT " + rep("CASE WHEN x THEN ", n) + "1" + rep(" END", n) }, 302},
	{"case else", func(n int) string { return "SELECT " + rep("CASE WHEN x THEN 1 ELSE ", n) + "1" + rep(" END", n) }, 540},
	{"function", func(n int) string { return "SELECT " + rep("f(", n) + "1" + rep(")", n) }, 404},
	{"window", func(n int) string { return "SELECT " + rep("sum(", n) + "x" + rep(") OVER ()", n) }, 404},
	{"array", func(n int) string { return "SELECT " + rep("ARRAY[", n) + "1" + rep("]", n) }, 721},
	{"subscript", func(n int) string { return "SELECT " + rep("x[", n) + "1" + rep("]", n) }, 404},
	{"row", func(n int) string { return "SELECT " + rep("ROW(", n) + "1" + rep(")", n) }, 540},
	{"comparison", func(n int) string { return "SELECT " + rep("(x = ", n) + "x" + rep(")", n) }, 655},
	{"scalar subquery", func(n int) string { return rep("SELECT (", n) + "1" + rep(")", n) }, 205},
	{"exists", func(n int) string { return rep("SELECT EXISTS (", n) + "SELECT 1" + rep(")", n) }, 186},
	{"in subquery", func(n int) string { return rep("SELECT x IN (", n) + "SELECT 1" + rep(")", n) }, 186},
	{"from subquery", func(n int) string { return rep("SELECT * FROM (", n) + "SELECT 1" + rep(") s", n) }, 302},
	{"cte", func(n int) string { return rep("WITH a AS (", n) + "SELECT 1" + rep(") SELECT * FROM a", n) }, 226},
	{"delete cte", func(n int) string {
		return rep("WITH a AS (DELETE FROM t WHERE x IN (", n) + "SELECT 1" + rep(") RETURNING *) SELECT 1", n)
	}, 139},
	{"json_object", func(n int) string { return "SELECT " + rep("json_object('a': ", n) + "1" + rep(")", n) }, 274},
	{"xmlelement", func(n int) string { return "SELECT " + rep("xmlelement(name a, ", n) + "1" + rep(")", n) }, 404},
	{"lateral", func(n int) string { return "SELECT * FROM t" + rep(" CROSS JOIN LATERAL (SELECT 1) s", n) }, 540},
}

func boundOf(t testing.TB, sql string) int {
	t.Helper()
	pb, err := pgparser.ScanToProtobuf(sql)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	kinds, err := scanKinds(pb)
	if err != nil {
		t.Fatalf("scan tokens: %v", err)
	}
	return depthBound(kinds)
}

// TestDepthBoundMargin: at the depth where the parser broke, every probed
// construct is at least three times over the limit, and is refused before it
// reaches the parser.
func TestDepthBoundMargin(t *testing.T) {
	for _, c := range nestedConstructs {
		t.Run(c.name, func(t *testing.T) {
			sql := c.gen(c.failAt)
			if b := boundOf(t, sql); b < 3*maxComplexity {
				t.Fatalf("bound at the failing depth %d is %d, want at least %d", c.failAt, b, 3*maxComplexity)
			}
			if cl, err := Classify(sql); cl != Unknown || !errors.Is(err, ErrTooComplex) {
				t.Fatalf("Classify = %s, %v; want unknown, ErrTooComplex", cl, err)
			}
			// A shallow version of the same construct is judged normally.
			if _, err := Classify(c.gen(3)); errors.Is(err, ErrTooComplex) {
				t.Fatalf("depth 3 refused as too complex")
			}
		})
	}
}

// TestFlatChainsAreNotComplex: lists and AND/OR chains do not deepen the
// tree, so long ones are judged.
func TestFlatChainsAreNotComplex(t *testing.T) {
	tests := []struct{ name, sql string }{
		{"long select list", "SELECT " + rep("x, ", 3000) + "x FROM t"},
		{"long in list", "SELECT * FROM t WHERE id IN (" + rep("1, ", 5000) + "1)"},
		{"long or chain", "SELECT * FROM t WHERE " + rep("id = 1 OR ", 2000) + "id = 2"},
		{"long and chain", "SELECT * FROM t WHERE " + rep("a <> 1 AND ", 2000) + "true"},
		{"between in and chain", "SELECT * FROM t WHERE " + rep("a BETWEEN 1 AND 2 AND ", 1000) + "true"},
		{"many values rows", "VALUES " + rep("(1, 'a'), ", 3000) + "(2, 'b')"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Classify(tt.sql)
			if err != nil || c != Read {
				t.Fatalf("Classify = %s, %v; want read", c, err)
			}
		})
	}
}

// TestRealisticQueriesFit: real reporting queries stay well inside the bound.
func TestRealisticQueriesFit(t *testing.T) {
	files, err := filepath.Glob("testdata/realistic/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no realistic queries: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if bound := boundOf(t, string(b)); bound > maxComplexity/2 {
				t.Errorf("bound %d is more than half the limit %d", bound, maxComplexity)
			}
			if c, err := Classify(string(b)); c != Read || err != nil {
				t.Fatalf("Classify = %s, %v; want read", c, err)
			}
		})
	}
}

func TestDepthBound(t *testing.T) {
	const (
		kw    = 300 // a keyword
		ident = tokIdent
	)
	tests := []struct {
		name  string
		kinds []int32
		want  int
	}{
		// Every statement is a level: it adds parenWeight (4). Parentheses
		// count as tokens of the level that holds them.
		{"empty", nil, 4},
		{"leaves only", []int32{ident, tokIConst, tokDot, ident}, 4},
		{"keywords", []int32{kw, kw, ident}, 2 + 4},
		{"comma resets", []int32{kw, kw, tokComma, kw}, 2 + 4},
		{"and resets", []int32{kw, kw, tokAnd, kw}, 2 + 4},
		{"or resets", []int32{kw, tokOr, kw, kw, kw}, 3 + 4},
		{"paren adds weight", []int32{kw, tokOpenParen, kw, tokCloseParen}, 3 + (1 + 4) + 4},
		{"child after paren counts", []int32{tokOpenParen, kw, tokCloseParen, kw, kw, kw}, 5 + (1 + 4) + 4},
		{"deepest child counts", []int32{tokOpenParen, kw, tokCloseParen, tokOpenParen, kw, kw, tokCloseParen}, 4 + (2 + 4) + 4},
		{"brackets", []int32{tokOpenBracket, kw, tokCloseBracket}, 2 + (1 + 4) + 4},
		{"nested", []int32{tokOpenParen, tokOpenParen, kw, tokCloseParen, tokCloseParen}, 2 + (2 + (1 + 4) + 4) + 4},
		{"unclosed", []int32{tokOpenParen, tokOpenParen, kw}, 1 + (1 + (1 + 4) + 4) + 4},
		{"stray close", []int32{tokCloseParen, kw}, 2 + 4},
		{"statements apart", []int32{kw, kw, kw, tokSemicolon, kw}, 3 + 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := depthBound(tt.kinds); got != tt.want {
				t.Fatalf("depthBound = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestProbeParserStack re-measures failAt for one construct, for use when
// the parser is upgraded. It breaks the parser of its process, so it runs
// only when asked, one construct per process:
//
//	OVERSEER_SQLGUARD_PROBE=not go test -run TestProbeParserStack ./internal/guard/sqlguard/
//
// It fails if the bound at the failing depth is under three times the limit.
func TestProbeParserStack(t *testing.T) {
	name := os.Getenv("OVERSEER_SQLGUARD_PROBE")
	if name == "" {
		t.Skip("set OVERSEER_SQLGUARD_PROBE to a construct name to probe")
	}
	var c *nestedConstruct
	for i := range nestedConstructs {
		if nestedConstructs[i].name == name {
			c = &nestedConstructs[i]
		}
	}
	if c == nil {
		t.Fatalf("no construct %q", name)
	}
	want, _ := pgparser.ParseToJSON("SELECT 1")
	for n := 10; n < 20000; n = n*11/10 + 1 {
		sql := c.gen(n)
		bound := boundOf(t, sql)
		done := make(chan error, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					done <- fmt.Errorf("trap: %v", p)
				}
			}()
			if _, err := pgparser.ParseToJSON(sql); err != nil {
				done <- nil // a clean parser error is fine
				return
			}
			if got, _ := pgparser.ParseToJSON("SELECT 1"); got != want {
				done <- errors.New("later results corrupted")
				return
			}
			done <- nil
		}()
		var failure error
		select {
		case failure = <-done:
		case <-time.After(15 * time.Second):
			failure = errors.New("hang")
		}
		if failure != nil {
			t.Logf("%s: parser broke at n=%d (bound %d): %v", name, n, bound, failure)
			if bound < 3*maxComplexity {
				t.Fatalf("bound %d at the failing depth is under %d", bound, 3*maxComplexity)
			}
			return
		}
	}
	t.Logf("%s: no failure up to n=20000", name)
}
