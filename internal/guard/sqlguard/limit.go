package sqlguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Errors of ForceLimit.
var (
	// ErrNotRead means ForceLimit was given SQL that is not a single read.
	ErrNotRead = errors.New("sqlguard: not a single read-only statement")
	// ErrBadLimit means the requested row limit is not positive.
	ErrBadLimit = errors.New("sqlguard: row limit must be positive")
)

// ForceLimit returns sql changed so that it returns at most n rows:
//
//   - a constant LIMIT (or FETCH FIRST … ROWS ONLY) above n is lowered to n,
//     and one at or below n is left alone;
//   - with no LIMIT, "LIMIT n" is appended;
//   - a LIMIT that is not a constant (a parameter, ALL, an expression) or a
//     FETCH … WITH TIES is kept, and the query is wrapped:
//     SELECT * FROM (query) AS overseer_limited LIMIT n;
//   - SHOW and EXPLAIN, whose output is bounded, are returned unchanged.
//
// sql must be a single read (see Classify); otherwise the error wraps
// ErrNotRead. The result is parsed again and must be a single read whose
// top-level LIMIT is n, so a rewrite can never produce something else.
func ForceLimit(sql string, n int) (string, error) {
	if n <= 0 {
		return "", fmt.Errorf("%w: %d", ErrBadLimit, n)
	}
	tree, err := parseTree(sql)
	if err != nil {
		return "", err
	}
	if a := analyzeTree(tree); a.Class != Read {
		return "", fmt.Errorf("%w: %s (%s)", ErrNotRead, a.Class, strings.Join(a.Reasons, "; "))
	}
	stmt := tree.Stmts[0]
	typ, body, _ := asNode(stmt.Stmt)
	if typ != "SelectStmt" {
		return sql, nil // SHOW, EXPLAIN
	}
	text := stmt.text(sql)
	var candidates []string
	switch lim, ok := constLimit(body); {
	case ok && lim <= int64(n):
		return sql, nil
	case ok:
		if out, ok := replaceConstLimit(sql, body, n); ok {
			candidates = append(candidates, out)
		}
	case body["limitCount"] == nil && body["limitOption"] != "LIMIT_OPTION_WITH_TIES":
		candidates = append(candidates, text+"\nLIMIT "+strconv.Itoa(n))
	}
	candidates = append(candidates, "SELECT * FROM (\n"+text+"\n) AS overseer_limited LIMIT "+strconv.Itoa(n))
	for _, c := range candidates {
		if hasLimit(c, n) {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: could not add a LIMIT to this query", ErrNotRead)
}

// constLimit returns the constant integer LIMIT of a SELECT (not WITH TIES).
func constLimit(body map[string]any) (int64, bool) {
	if body["limitOption"] == "LIMIT_OPTION_WITH_TIES" {
		return 0, false
	}
	lc, _ := body["limitCount"].(map[string]any)
	typ, c, ok := asNode(lc)
	if !ok || typ != "A_Const" {
		return 0, false
	}
	if isNull, _ := c["isnull"].(bool); isNull {
		return 0, false
	}
	iv, ok := c["ival"].(map[string]any)
	if !ok {
		return 0, false
	}
	num, ok := iv["ival"].(json.Number)
	if !ok {
		return 0, true // an omitted ival is 0
	}
	v, err := num.Int64()
	if err != nil {
		return 0, false
	}
	return v, true
}

// replaceConstLimit replaces the LIMIT constant's token in sql with n.
func replaceConstLimit(sql string, body map[string]any, n int) (string, bool) {
	lc, _ := body["limitCount"].(map[string]any)
	_, c, _ := asNode(lc)
	loc, ok := c["location"].(json.Number)
	if !ok {
		return "", false
	}
	start64, err := loc.Int64()
	if err != nil || start64 < 0 || start64 >= int64(len(sql)) {
		return "", false
	}
	start := int(start64)
	end := start
	for end < len(sql) && isNumberChar(sql[end]) {
		end++
	}
	if end == start {
		return "", false
	}
	return sql[:start] + strconv.Itoa(n) + sql[end:], true
}

func isNumberChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// hasLimit reports whether sql is a single read whose top-level SELECT has
// the constant LIMIT n.
func hasLimit(sql string, n int) bool {
	tree, err := parseTree(sql)
	if err != nil || len(tree.Stmts) != 1 || analyzeTree(tree).Class != Read {
		return false
	}
	typ, body, _ := asNode(tree.Stmts[0].Stmt)
	if typ != "SelectStmt" {
		return false
	}
	lim, ok := constLimit(body)
	return ok && lim == int64(n)
}
