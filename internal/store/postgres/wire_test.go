package postgres

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/pgtest"
)

// testPool is a pool of at most n connections on a fresh database.
func testPool(t *testing.T, n int) *pool {
	t.Helper()
	return testPoolWith(t, poolConfig{maxConns: n, maxIdle: time.Minute, healthCheck: time.Second}, time.Now)
}

// testPoolWith is a pool with settings pc and clock now on a fresh
// database.
func testPoolWith(t *testing.T, pc poolConfig, now func() time.Time) *pool {
	t.Helper()
	cfg, _, err := parseURL(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	p := newPoolClock(cfg, pc, now)
	t.Cleanup(func() {
		// Bounded: a test that failed holding a connection fails here
		// too rather than hang.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return p
}

// The server reads what encodeArg sends as the value it stands for, and
// scanValue reads it back.
func TestWireValuesRoundTrip(t *testing.T) {
	p := testPool(t, 2)
	ctx := t.Context()
	for _, s := range []string{"", "plain", `quote " and backslash \ and both \"`, "{a,b}", "NULL", "ünïcødé ✓", "new\nline\ttab", "'; DROP TABLE x; --"} {
		var got string
		if err := p.QueryRow(ctx, `SELECT $1::text`, s).Scan(&got); err != nil || got != s {
			t.Errorf("text %q: got %q, %v", s, got, err)
		}
	}
	for _, n := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64} {
		var got int64
		if err := p.QueryRow(ctx, `SELECT $1::bigint`, n).Scan(&got); err != nil || got != n {
			t.Errorf("bigint %d: got %d, %v", n, got, err)
		}
	}
	for _, b := range []bool{true, false} {
		var got bool
		if err := p.QueryRow(ctx, `SELECT $1::boolean`, b).Scan(&got); err != nil || got != b {
			t.Errorf("boolean %v: got %v, %v", b, got, err)
		}
	}
	var st store.ApprovalStatus = store.StatusApproved // a named string type
	var gotStatus string
	if err := p.QueryRow(ctx, `SELECT $1::text`, st).Scan(&gotStatus); err != nil || gotStatus != string(st) {
		t.Errorf("named string: got %q, %v", gotStatus, err)
	}
	when := time.Date(2026, 12, 6, 9, 30, 1, 123456000, time.FixedZone("x", 5*3600+1800))
	var unix int64
	if err := p.QueryRow(ctx, `SELECT (extract(epoch FROM $1::timestamptz) * 1000000)::bigint`, when).Scan(&unix); err != nil ||
		unix != when.UnixMicro() {
		t.Errorf("timestamptz: got %d, want %d, %v", unix, when.UnixMicro(), err)
	}
	// Arrays go in the binary format to a prepared statement, as text
	// literals to an unnamed one: both are read as sent.
	for _, mode := range [][]any{nil, {unnamed}} {
		arg := func(v any) []any { return append(append([]any{}, mode...), v) }
		words := []string{"", "a", `"quoted"`, `back\slash`, "{}", ",", "NULL", "null", " spaced ", "ünï", `{"json": "x\"y"}`}
		rows, err := p.Query(ctx, `SELECT x FROM unnest($1::text[]) WITH ORDINALITY AS u(x, n) ORDER BY n`, arg(words)...)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		if err := rows.Err(); err != nil || !slices.Equal(got, words) {
			t.Errorf("text[] (%v): got %q, %v", mode, got, err)
		}
		nums := []int64{3, -4, math.MaxInt64, math.MinInt64}
		rows, err = p.Query(ctx, `SELECT x FROM unnest($1::bigint[]) WITH ORDINALITY AS u(x, n) ORDER BY n`, arg(nums)...)
		if err != nil {
			t.Fatal(err)
		}
		var gotNums []int64
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			gotNums = append(gotNums, n)
		}
		if err := rows.Err(); err != nil || !slices.Equal(gotNums, nums) {
			t.Errorf("bigint[] (%v): got %v, %v", mode, gotNums, err)
		}
		for _, empty := range []any{[]string{}, []string(nil), []int64{}, []int64(nil)} {
			var n int64
			q := `SELECT count(*) FROM unnest($1::text[])`
			if _, ok := empty.([]int64); ok {
				q = `SELECT count(*) FROM unnest($1::bigint[])`
			}
			if err := p.QueryRow(ctx, q, arg(empty)...).Scan(&n); err != nil || n != 0 {
				t.Errorf("empty array %#v (%v): %d rows, %v", empty, mode, n, err)
			}
		}
	}
	// NULL: sent for a nil *string, read into **string, refused by *string.
	var none *string
	var isNull bool
	if err := p.QueryRow(ctx, `SELECT $1::text IS NULL`, none).Scan(&isNull); err != nil || !isNull {
		t.Errorf("nil *string: IS NULL = %v, %v", isNull, err)
	}
	some := "x"
	var back *string
	if err := p.QueryRow(ctx, `SELECT $1::text`, &some).Scan(&back); err != nil || back == nil || *back != "x" {
		t.Errorf("*string: got %v, %v", back, err)
	}
	if err := p.QueryRow(ctx, `SELECT NULL::text`).Scan(&back); err != nil || back != nil {
		t.Errorf("NULL into **string: got %v, %v", back, err)
	}
	var s string
	if err := p.QueryRow(ctx, `SELECT NULL::text`).Scan(&s); err == nil {
		t.Error("NULL into *string: no error")
	}
	var small int32
	if err := p.QueryRow(ctx, `SELECT 4294967296::bigint`).Scan(&small); err == nil {
		t.Errorf("2^32 into *int32: no error, got %d", small)
	}
	if _, err := p.Exec(ctx, `SELECT $1::text`, struct{}{}); err == nil {
		t.Error("an argument of an unsupported type: no error")
	}
	if err := p.QueryRow(ctx, `SELECT 1 WHERE false`).Scan(&s); !errors.Is(err, errNoRows) {
		t.Errorf("no row: %v, want errNoRows", err)
	}
}

// A connection prepares a statement once and runs it prepared afterwards;
// an unnamed one is not kept.
func TestWireStatementsPrepared(t *testing.T) {
	p := testPool(t, 1)
	ctx := t.Context()
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	for i := range 3 {
		var n int64
		if err := c.QueryRow(ctx, `SELECT $1::bigint + 1`, i).Scan(&n); err != nil || n != int64(i)+1 {
			t.Fatalf("run %d: %d, %v", i, n, err)
		}
	}
	if _, err := c.Exec(ctx, `SELECT $1::text`, unnamed, "x"); err != nil {
		t.Fatal(err)
	}
	var prepared int64
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement = $1`, `SELECT $1::bigint + 1`).Scan(&prepared); err != nil {
		t.Fatal(err)
	}
	if prepared != 1 || len(c.stmts) != 2 { // the counted one and the count
		t.Errorf("prepared on the server %d, kept %d: want 1 and 2", prepared, len(c.stmts))
	}
	if _, ok := c.stmts[`SELECT $1::text`]; ok {
		t.Error("an unnamed statement was prepared")
	}
}

// A batch runs its statements in order in one go, hands QueryRow's
// function its first row, and returns the first error; after it the
// server runs nothing more of the batch.
func TestWireBatch(t *testing.T) {
	p := testPool(t, 1)
	ctx := t.Context()
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `CREATE TABLE t (k text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	var got string
	var none error
	b := &batch{}
	b.Queue(`BEGIN`)
	b.Queue(`INSERT INTO t VALUES ($1)`, "a")
	b.Queue(`SELECT k FROM t WHERE k = $1`, "a").QueryRow(func(r *row) error { return r.Scan(&got) })
	b.Queue(`SELECT k FROM t WHERE k = $1`, "zz").QueryRow(func(r *row) error { none = r.Scan(&got); return nil })
	b.Queue(`COMMIT`)
	if err := c.SendBatch(ctx, b); err != nil || got != "a" || !errors.Is(none, errNoRows) {
		t.Fatalf("batch: %v, row %q, missing row %v", err, got, none)
	}
	b = &batch{}
	b.Queue(`BEGIN`)
	b.Queue(`INSERT INTO t VALUES ($1)`, "b")
	b.Queue(`INSERT INTO t VALUES ($1)`, "a") // a duplicate: fails
	b.Queue(`INSERT INTO t VALUES ($1)`, "c")
	b.Queue(`COMMIT`)
	if err := c.SendBatch(ctx, b); err == nil {
		t.Fatal("a failing batch: no error")
	}
	if c.TxStatus() != 'E' {
		t.Errorf("after the failure: transaction status %c, want E", c.TxStatus())
	}
	if _, err := c.Exec(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := c.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Errorf("rows after the failed batch: %d, %v; want 1", n, err)
	}
	b = &batch{}
	b.Queue(`SELECT nonsense FROM nowhere`)
	if err := c.SendBatch(ctx, b); !errors.As(err, new(*notSentError)) {
		t.Errorf("a batch whose statement does not prepare: %v, want notSentError", err)
	}
}

// The pool lends at most its size, makes a caller wait for a connection
// given back, reuses the ones given back idle, and closes one given back
// in a transaction.
func TestWirePool(t *testing.T) {
	p := testPool(t, 2)
	ctx := t.Context()
	pid := func(c *poolConn) int64 {
		var n int64
		if err := c.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if c, err := p.Acquire(short); err == nil {
		c.Release()
		t.Fatal("a third connection from a pool of two")
	}
	pa := pid(a)
	a.Release()
	a2, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pid(a2) != pa {
		t.Error("the idle connection was not reused")
	}
	if _, err := a2.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	a2.Release() // in a transaction: closed
	a3, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pid(a3) == pa {
		t.Error("a connection given back in a transaction was lent again")
	}
	a3.Release()
	b.Release()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acquire(ctx); !errors.Is(err, errPoolClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
}

func TestParseURL(t *testing.T) {
	cfg, pc, err := parseURL("postgres://u@localhost:5/db?pool_max_conns=12&statement_cache_capacity=3&application_name=x")
	if err != nil {
		t.Fatal(err)
	}
	if pc.maxConns != 12 {
		t.Errorf("pool size %d, want 12", pc.maxConns)
	}
	for k := range cfg.RuntimeParams {
		if k != "application_name" {
			t.Errorf("parameter %q would be sent to the server", k)
		}
	}
	if _, pc, _ := parseURL("postgres://u@localhost:5/db?pool_max_conns=2"); pc.maxConns < 8 {
		t.Errorf("pool size %d, want at least 8", pc.maxConns)
	}
	for _, bad := range []string{"postgres://u@localhost:5/db?pool_max_conns=x", "postgres://u:secret@localhost:99999999/db"} {
		if _, _, err := parseURL(bad); err == nil {
			t.Errorf("%s: no error", bad)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("the error quotes the password: %v", err)
		}
	}
}

// A connection whose prepared statement went out of date (its table
// changed type) is not lent again: the statement works on a new one.
func TestWireStalePreparedStatement(t *testing.T) {
	p := testPool(t, 1)
	ctx := t.Context()
	if _, err := p.Exec(ctx, `CREATE TABLE t (k bigint)`); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT k FROM t`
	pid := func() int64 {
		var n int64
		if err := p.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := p.QueryRow(ctx, q).Scan(new(int64)); !errors.Is(err, errNoRows) {
		t.Fatal(err)
	}
	before := pid()
	if _, err := p.Exec(ctx, `ALTER TABLE t ALTER COLUMN k TYPE text`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, `INSERT INTO t VALUES ('x')`); err != nil {
		t.Fatal(err)
	}
	var s string
	err := p.QueryRow(ctx, q).Scan(&s)
	if err == nil {
		t.Fatal("the stale statement ran without an error: this test checks nothing")
	}
	if pid() == before {
		t.Fatalf("the connection with the stale statement (%v) was lent again", err)
	}
	if err := p.QueryRow(ctx, q).Scan(&s); err != nil || s != "x" {
		t.Fatalf("on a new connection: %q, %v", s, err)
	}
}

// Arrays go in the binary format only to a parameter of their own type.
func TestEncodeArgsFormats(t *testing.T) {
	args := []any{[]string{"a"}, []int64{1}, []string{"b"}, int64(2), "c"}
	_, formats, err := encodeArgs(args, []uint32{oidTextArray, oidInt8Array, 1015 /* varchar[] */, oidInt8, oidText})
	if err != nil || !slices.Equal(formats, []int16{1, 1, 0, 0, 0}) {
		t.Errorf("formats %v, %v", formats, err)
	}
	if _, formats, _ := encodeArgs(args, nil); formats != nil {
		t.Errorf("no types known: formats %v, want all text", formats)
	}
}
