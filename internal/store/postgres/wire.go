package postgres

// The store talks to the server with pgx's protocol layer (pgconn) and the
// little this file adds to it: a pool of connections, transactions, query
// arguments and results in PostgreSQL's text format, and pipelined
// batches. pgx's own front (pgx.Conn, pgxpool) would bring its type
// system (pgtype), which registers codecs for every PostgreSQL type: with
// them the binary was 2.9 MB larger. The store needs strings, integers,
// booleans, times and arrays of strings and integers.
//
// Each connection prepares a statement the first time it runs it, and runs
// it prepared afterwards (as pgx did by default): the server infers its
// parameters' types from the statement and parses it once per connection.
// Values are sent and read as text, but for arrays of strings and
// integers, sent in the binary format when the statement is prepared. A call is one round trip (a batch: one
// round trip for all of its statements), and one more for each statement
// the connection has not run before. A statement whose first argument is
// unnamed runs as an unnamed statement instead, planned for its arguments
// each time.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// errNoRows: QueryRow's Scan found no row.
var errNoRows = errors.New("no rows in result set")

// scanner is what a row of a result and a single-row result share.
type scanner interface {
	Scan(dest ...any) error
}

// Type OIDs of the parameters sent in binary.
const (
	oidTextArray = 1009
	oidInt8Array = 1016
	oidText      = 25
	oidInt8      = 20
)

// encodeArgs returns args in PostgreSQL's text format (nil: NULL), except
// arrays for parameters known (oids: the prepared statement's parameter
// types) to be text[] or bigint[], which go in the binary format: the
// server reads them without parsing and unescaping a literal (the audit
// records' JSON, full of quotes, goes in such arrays). formats is nil when
// all are text.
func encodeArgs(args []any, oids []uint32) (vals [][]byte, formats []int16, err error) {
	if len(args) == 0 {
		return nil, nil, nil
	}
	vals = make([][]byte, len(args))
	for i, a := range args {
		var oid uint32
		if i < len(oids) {
			oid = oids[i]
		}
		v, binary := encodeBinary(a, oid)
		if !binary {
			if v, err = encodeArg(a); err != nil {
				return nil, nil, fmt.Errorf("argument $%d: %w", i+1, err)
			}
		} else {
			if formats == nil {
				formats = make([]int16, len(args))
			}
			formats[i] = 1
		}
		vals[i] = v
	}
	return vals, formats, nil
}

// encodeBinary returns a in the binary format of the type oid, when it is
// an array of that type.
func encodeBinary(a any, oid uint32) ([]byte, bool) {
	switch v := a.(type) {
	case []string:
		if oid != oidTextArray || v == nil {
			return nil, false
		}
		n := 20
		for _, s := range v {
			n += 4 + len(s)
		}
		b := arrayHeader(make([]byte, 0, n), len(v), oidText)
		for _, s := range v {
			b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
		return b, true
	case []int64:
		if oid != oidInt8Array || v == nil {
			return nil, false
		}
		b := arrayHeader(make([]byte, 0, 20+12*len(v)), len(v), oidInt8)
		for _, x := range v {
			b = binary.BigEndian.AppendUint32(b, 8)
			b = binary.BigEndian.AppendUint64(b, uint64(x))
		}
		return b, true
	}
	return nil, false
}

// arrayHeader appends the header of a one-dimensional array of n elements
// of type elem, none NULL (an empty array has no dimension).
func arrayHeader(b []byte, n int, elem uint32) []byte {
	if n == 0 {
		b = binary.BigEndian.AppendUint32(b, 0) // dimensions
		b = binary.BigEndian.AppendUint32(b, 0) // no NULL
		return binary.BigEndian.AppendUint32(b, elem)
	}
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, elem)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return binary.BigEndian.AppendUint32(b, 1) // lower bound
}

func encodeArg(a any) ([]byte, error) {
	switch v := a.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(v), nil
	case *string:
		if v == nil {
			return nil, nil
		}
		return []byte(*v), nil
	case int64:
		return strconv.AppendInt(nil, v, 10), nil
	case int:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(nil, int64(v), 10), nil
	case bool:
		if v {
			return []byte("t"), nil
		}
		return []byte("f"), nil
	case time.Time:
		return v.AppendFormat(nil, "2006-01-02 15:04:05.999999999Z07:00"), nil
	case []string:
		if v == nil {
			return nil, nil
		}
		b := []byte{'{'}
		for i, s := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			for j := 0; j < len(s); j++ {
				if s[j] == '"' || s[j] == '\\' {
					b = append(b, '\\')
				}
				b = append(b, s[j])
			}
			b = append(b, '"')
		}
		return append(b, '}'), nil
	case []int64:
		if v == nil {
			return nil, nil
		}
		b := []byte{'{'}
		for i, n := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, n, 10)
		}
		return append(b, '}'), nil
	}
	// Named string and integer types (store.ApprovalStatus …).
	switch rv := reflect.ValueOf(a); rv.Kind() {
	case reflect.String:
		return []byte(rv.String()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(nil, rv.Int(), 10), nil
	}
	return nil, fmt.Errorf("unsupported type %T", a)
}

// scanValues sets dest from the text-format values of one row. A
// destination of a type scanValue does not read fails the scan before any
// is set.
func scanValues(vals [][]byte, dest []any) error {
	if len(vals) != len(dest) {
		return fmt.Errorf("scan: %d columns into %d values", len(vals), len(dest))
	}
	for i, d := range dest {
		if !scannable(d) {
			return fmt.Errorf("scan column %d: %w", i, unscannable(d))
		}
	}
	for i, d := range dest {
		if err := scanValue(vals[i], d); err != nil {
			return fmt.Errorf("scan column %d: %w", i, err)
		}
	}
	return nil
}

// scannable reports whether scanValue reads into dest's type. A new type
// needs a case here and in scanValue (TestScanValueTypes checks that the
// two agree, and that any other type is refused).
func scannable(dest any) bool {
	switch p := dest.(type) {
	case **string:
		return p != nil
	case *string:
		return p != nil
	case *int64:
		return p != nil
	case *int:
		return p != nil
	case *int32:
		return p != nil
	case *bool:
		return p != nil
	}
	return false
}

func unscannable(dest any) error {
	return fmt.Errorf("cannot scan into %T: the store reads *string, **string, *int64, *int, *int32 and *bool only", dest)
}

// scanValue sets dest from one text-format value (nil: NULL). Any
// destination it does not read is an error, and dest is left as it was;
// so is a value that does not parse as dest's type.
func scanValue(v []byte, dest any) error {
	if !scannable(dest) {
		return unscannable(dest)
	}
	if p, ok := dest.(**string); ok {
		if v == nil {
			*p = nil
			return nil
		}
		s := string(v)
		*p = &s
		return nil
	}
	if v == nil {
		return fmt.Errorf("NULL into %T", dest)
	}
	switch p := dest.(type) {
	case *string:
		*p = string(v)
	case *int64:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return err
		}
		*p = n
	case *int:
		n, err := strconv.ParseInt(string(v), 10, strconv.IntSize)
		if err != nil {
			return err
		}
		*p = int(n)
	case *int32:
		n, err := strconv.ParseInt(string(v), 10, 32)
		if err != nil {
			return err
		}
		*p = int32(n)
	case *bool:
		switch string(v) {
		case "t":
			*p = true
		case "f":
			*p = false
		default:
			return fmt.Errorf("%q is not a boolean", v)
		}
	default:
		return unscannable(dest)
	}
	return nil
}

// unnamed, as a statement's first argument (not sent), has it run as an
// unnamed statement: parsed and planned for its arguments at each run,
// never with a generic plan.
var unnamed = unnamedStmt{}

type unnamedStmt struct{}

// maxStatements is how many statements a connection keeps prepared; once
// it has that many, the others run unnamed.
const maxStatements = 512

// conn is one connection to the server.
type conn struct {
	pg    *pgconn.PgConn
	stmts map[string]*pgconn.StatementDescription // prepared, by their text
	stale bool                                    // a prepared statement is out of date: not to be reused

	expires time.Time // when a pool's connection is past its lifetime
	lentAt  int       // its index in its pool's lent connections, while lent
}

// seen notes whether err says that a statement c prepared is out of date
// (its tables changed type under it, or the server forgot it), and
// returns err. A pool closes such a connection when it is given back, so
// that the statements are prepared again on a new one.
func (c *conn) seen(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "0A000" && strings.Contains(pe.Message, "cached plan") || pe.Code == "26000") {
		c.stale = true
	}
	return err
}

// stmt is a statement ready to send: prepared (sd) or unnamed (sd nil),
// with its arguments encoded.
type stmt struct {
	sd      *pgconn.StatementDescription
	vals    [][]byte
	formats []int16
}

// statement returns sql with args ready to send: prepared on c (the first
// time c sees it), or unnamed (args start with unnamed, or c keeps
// maxStatements already).
func (c *conn) statement(ctx context.Context, sql string, args []any) (stmt, error) {
	named := true
	if len(args) > 0 && args[0] == unnamed {
		named, args = false, args[1:]
	}
	var sd *pgconn.StatementDescription
	if named {
		if sd = c.stmts[sql]; sd == nil && len(c.stmts) < maxStatements {
			var err error
			if sd, err = c.pg.Prepare(ctx, "overseer_"+strconv.Itoa(len(c.stmts)+1), sql, nil); err != nil {
				return stmt{}, err
			}
			if c.stmts == nil {
				c.stmts = map[string]*pgconn.StatementDescription{}
			}
			c.stmts[sql] = sd
		}
	}
	var oids []uint32
	if sd != nil {
		oids = sd.ParamOIDs
	}
	vals, formats, err := encodeArgs(args, oids)
	return stmt{sd: sd, vals: vals, formats: formats}, err
}

// run starts sql on c.
func (c *conn) run(ctx context.Context, sql string, args []any) (*pgconn.ResultReader, error) {
	st, err := c.statement(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	if st.sd != nil {
		return c.pg.ExecStatement(ctx, st.sd, st.vals, st.formats, nil), nil
	}
	return c.pg.ExecParams(ctx, sql, st.vals, nil, st.formats, nil), nil
}

// connect opens a connection with cfg.
func connect(ctx context.Context, cfg *pgconn.Config) (*conn, error) {
	pg, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &conn{pg: pg}, nil
}

// Close closes the connection.
func (c *conn) Close(ctx context.Context) error { return c.pg.Close(ctx) }

// Exec runs sql with args and returns its command tag.
func (c *conn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	rr, err := c.run(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := rr.Close()
	return tag, c.seen(err)
}

// Query runs sql with args; the rows must be closed (reading them to the
// end closes them).
func (c *conn) Query(ctx context.Context, sql string, args ...any) (*rows, error) {
	rr, err := c.run(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	return &rows{rr: rr, c: c}, nil
}

// QueryRow runs sql with args and keeps its first row; Scan reports
// errNoRows when it has none.
func (c *conn) QueryRow(ctx context.Context, sql string, args ...any) *row {
	rr, err := c.run(ctx, sql, args)
	if err != nil {
		return &row{err: err}
	}
	r := firstRow(rr)
	c.seen(r.err)
	return r
}

// firstRow reads rr to its end and keeps its first row.
func firstRow(rr *pgconn.ResultReader) *row {
	r := &row{err: errNoRows}
	if rr.NextRow() {
		vals := rr.Values()
		r.vals = make([][]byte, len(vals))
		for i, v := range vals {
			if v != nil {
				r.vals[i] = append([]byte{}, v...)
			}
		}
		r.err = nil
	}
	if _, err := rr.Close(); err != nil {
		r.err = err
	}
	return r
}

// TxStatus is the server's transaction status: 'I' idle, 'T' in a
// transaction, 'E' in a failed transaction.
func (c *conn) TxStatus() byte { return c.pg.TxStatus() }

// WaitForNotification waits for a notification on a connection opened
// with listenConfig's configuration.
func (c *conn) WaitForNotification(ctx context.Context) error { return c.pg.WaitForNotification(ctx) }

// SendBatch runs b's statements in one round trip, in order, and returns
// the first error (a statement's, or a QueryRow function's). After a
// failed statement the server skips the rest. Statements the connection
// has not prepared yet are prepared first (before any of the batch runs).
func (c *conn) SendBatch(ctx context.Context, b *batch) error {
	var pb pgconn.Batch
	for _, q := range b.queries {
		st, err := c.statement(ctx, q.sql, q.args)
		if err != nil {
			return &notSentError{err}
		}
		if st.sd != nil {
			pb.ExecStatement(st.sd, st.vals, st.formats, nil)
		} else {
			pb.ExecParams(q.sql, st.vals, nil, st.formats, nil)
		}
	}
	mrr := c.pg.ExecBatch(ctx, &pb)
	var first error
	got := 0
	for _, q := range b.queries {
		if !mrr.NextResult() {
			break
		}
		got++
		rr := mrr.ResultReader()
		var err error
		if q.fn != nil {
			r := firstRow(rr)
			err = q.fn(r)
		} else {
			_, err = rr.Close()
		}
		if first == nil {
			first = err
		}
	}
	if err := mrr.Close(); first == nil {
		first = err
	}
	if first == nil && got < len(b.queries) {
		// A QueryRow function not called leaves its variables as they
		// were: never a success.
		first = fmt.Errorf("batch: %d results for %d statements", got, len(b.queries))
	}
	return c.seen(first)
}

// notSentError is SendBatch's error when none of the batch ran: one of its
// statements could not be prepared or its arguments encoded.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return "batch not sent: " + e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// batch is statements sent together (conn.SendBatch).
type batch struct {
	queries []*queued
}

type queued struct {
	sql  string
	args []any
	fn   func(*row) error
}

// Queue adds a statement to b.
func (b *batch) Queue(sql string, args ...any) *queued {
	q := &queued{sql: sql, args: args}
	b.queries = append(b.queries, q)
	return q
}

// QueryRow has fn read the statement's first row when the batch runs; its
// error is the batch's.
func (q *queued) QueryRow(fn func(*row) error) { q.fn = fn }

// row is the first row of a result.
type row struct {
	vals [][]byte
	err  error
}

// Scan sets dest from the row, or returns the query's error (errNoRows
// when it found no row).
func (r *row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return scanValues(r.vals, dest)
}

// rows is a result read row by row.
type rows struct {
	rr      *pgconn.ResultReader
	c       *conn
	err     error
	done    bool
	release func() // gives the connection back, when the pool lent it
}

// Next advances to the next row; at the end (or on an error) it closes
// the rows and returns false.
func (r *rows) Next() bool {
	if r.done {
		return false
	}
	if r.rr.NextRow() {
		return true
	}
	r.Close()
	return false
}

// Scan sets dest from the current row.
func (r *rows) Scan(dest ...any) error {
	if err := scanValues(r.rr.Values(), dest); err != nil {
		r.err = err
		return err
	}
	return nil
}

// Err is the error that ended the rows, once they are closed.
func (r *rows) Err() error { return r.err }

// Close reads the rest of the result and gives the connection back.
func (r *rows) Close() {
	if r.done {
		return
	}
	r.done = true
	if _, err := r.rr.Close(); err != nil && r.err == nil {
		r.err = r.c.seen(err)
	}
	if r.release != nil {
		r.release()
	}
}

// collectInts reads rows of one integer column.
func collectInts(r *rows, err error) ([]int, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []int
	for r.Next() {
		var n int
		if err := r.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, r.Err()
}

// querier is what pool, connection and transaction have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (*rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) *row
}

var (
	_ querier = (*conn)(nil)
	_ querier = (*pool)(nil)
	_ querier = (*tx)(nil)
	_ querier = (*poolConn)(nil)
)

// poolConfig is how a pool lends and recycles its connections (parseURL
// reads it from the database URL; a zero field takes its default).
type poolConfig struct {
	maxConns int // the most connections lent at once
	// maxLifetime: a connection older than that, plus a random part of
	// lifetimeJitter drawn when it is opened, is closed when it is given
	// back or next taken (never while lent), so that connections follow
	// a server's failover or changed settings and do not all end at once.
	maxLifetime    time.Duration
	lifetimeJitter time.Duration
	maxIdle        time.Duration // a connection idle for longer is closed
	healthCheck    time.Duration // how often the idle connections are checked
}

// The pool's defaults.
const (
	defaultMaxConnLifetime = time.Hour
	defaultMaxConnIdleTime = time.Minute
	defaultHealthCheck     = 5 * time.Second
)

// withDefaults returns pc with its zero fields set to their defaults (no
// jitter: parseURL's default is a tenth of the lifetime).
func (pc poolConfig) withDefaults() poolConfig {
	if pc.maxConns < 1 {
		pc.maxConns = 1
	}
	if pc.maxLifetime <= 0 {
		pc.maxLifetime = defaultMaxConnLifetime
	}
	if pc.maxIdle <= 0 {
		pc.maxIdle = defaultMaxConnIdleTime
	}
	if pc.healthCheck <= 0 {
		pc.healthCheck = defaultHealthCheck
	}
	return pc
}

// pool lends connections: at most maxConns at a time; the ones given back
// wait idle for the next caller, and are closed after maxIdle unused or
// once past their lifetime. A connection that broke, or was given back in
// a transaction, busy or with a statement out of date, is closed, never
// lent again.
type pool struct {
	cfg    *pgconn.Config
	pc     poolConfig
	tokens chan struct{} // one per connection lent (or being opened to be lent)
	now    func() time.Time

	mu      sync.Mutex
	idle    []idleConn // the most recently used last
	lent    []*conn    // each at its lentAt
	closed  bool
	closing chan struct{} // closed by Close: the Acquires waiting give up
	done    chan struct{} // closed when prune has returned
}

type idleConn struct {
	c     *conn
	since time.Time
}

// pingAfter: a connection idle for longer is pinged before it is lent, so
// that one the server dropped meanwhile (a restart) is not used.
const pingAfter = time.Second

// pingTimeout bounds that ping when the connection's configuration sets
// no connect timeout: a server that stopped answering fails it.
const pingTimeout = 5 * time.Second

func newPool(cfg *pgconn.Config, pc poolConfig) *pool { return newPoolClock(cfg, pc, time.Now) }

// newPoolClock is newPool with a clock (tests move theirs).
func newPoolClock(cfg *pgconn.Config, pc poolConfig, now func() time.Time) *pool {
	pc = pc.withDefaults()
	p := &pool{cfg: cfg, pc: pc, tokens: make(chan struct{}, pc.maxConns), now: now,
		closing: make(chan struct{}), done: make(chan struct{})}
	go p.prune()
	return p
}

// prune runs pruneIdle every healthCheck until the pool closes.
func (p *pool) prune() {
	defer close(p.done)
	t := time.NewTicker(p.pc.healthCheck)
	defer t.Stop()
	for {
		select {
		case <-p.closing:
			return
		case <-t.C:
		}
		p.pruneIdle()
	}
}

// pruneIdle closes the idle connections that were idle for longer than
// maxIdle, are past their lifetime, or that the server closed.
func (p *pool) pruneIdle() {
	var old []*conn
	now := p.now()
	p.mu.Lock()
	kept := p.idle[:0]
	for _, ic := range p.idle {
		if p.worn(ic, now) || ic.c.pg.IsClosed() {
			old = append(old, ic.c)
		} else {
			kept = append(kept, ic)
		}
	}
	clear(p.idle[len(kept):])
	p.idle = kept
	p.mu.Unlock()
	for _, c := range old {
		closeConn(c)
	}
}

// worn reports whether an idle connection is to be closed for its age:
// idle for longer than maxIdle, or past its lifetime.
func (p *pool) worn(ic idleConn, now time.Time) bool {
	return now.Sub(ic.since) > p.pc.maxIdle || !now.Before(ic.c.expires)
}

// lifetime returns the lifetime of a new connection: maxLifetime and a
// random part of the jitter.
func (p *pool) lifetime() time.Duration {
	d := p.pc.maxLifetime
	if p.pc.lifetimeJitter > 0 {
		d += rand.N(p.pc.lifetimeJitter)
	}
	return d
}

func closeConn(c *conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// errPoolClosed: the pool is closed (or closing); it lends nothing more.
var errPoolClosed = errors.New("postgres: the connection pool is closed")

// Acquire lends a connection; Release gives it back. It fails once the
// pool is closing, also while it waits for a connection.
func (p *pool) Acquire(ctx context.Context) (*poolConn, error) {
	select {
	case p.tokens <- struct{}{}:
	default: // the pool is full: wait
		select {
		case p.tokens <- struct{}{}:
		case <-p.closing:
			return nil, errPoolClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			<-p.tokens
			return nil, errPoolClosed
		}
		var ic idleConn
		if n := len(p.idle); n > 0 {
			ic = p.idle[n-1]
			p.idle[n-1] = idleConn{}
			p.idle = p.idle[:n-1]
			p.lend(ic.c)
		}
		p.mu.Unlock()
		if ic.c == nil {
			break
		}
		now := p.now()
		if ic.c.pg.IsClosed() || p.worn(ic, now) || now.Sub(ic.since) > pingAfter && p.ping(ctx, ic.c) != nil {
			p.mu.Lock()
			p.unlend(ic.c)
			p.mu.Unlock()
			closeConn(ic.c)
			if err := ctx.Err(); err != nil {
				<-p.tokens
				return nil, err
			}
			continue
		}
		return &poolConn{conn: ic.c, p: p}, nil
	}
	c, err := connect(ctx, p.cfg)
	if err != nil {
		<-p.tokens
		return nil, err
	}
	c.expires = p.now().Add(p.lifetime())
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.lend(c)
	}
	p.mu.Unlock()
	if closed {
		closeConn(c)
		<-p.tokens
		return nil, errPoolClosed
	}
	return &poolConn{conn: c, p: p}, nil
}

// lend and unlend keep p.lent (under p.mu).
func (p *pool) lend(c *conn) {
	c.lentAt = len(p.lent)
	p.lent = append(p.lent, c)
}

func (p *pool) unlend(c *conn) {
	last := p.lent[len(p.lent)-1]
	last.lentAt = c.lentAt
	p.lent[c.lentAt] = last
	p.lent[len(p.lent)-1] = nil
	p.lent = p.lent[:len(p.lent)-1]
}

// ping checks that the server still answers on c, within the connect
// timeout.
func (p *pool) ping(ctx context.Context, c *conn) error {
	d := p.cfg.ConnectTimeout
	if d <= 0 {
		d = pingTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return c.pg.Ping(ctx)
}

// Close closes the pool: Acquire fails from then on (errPoolClosed, also
// for the callers waiting for a connection), the idle connections are
// closed, and Close waits for the lent ones to be given back (each is
// closed then), or for ctx to end. Then it interrupts the connections
// still lent, so that what runs on them fails (and each is closed when
// given back), and returns an error that says so. A second Close returns
// nil at once.
func (p *pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.closing)
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	<-p.done
	for _, ic := range idle {
		closeConn(ic.c)
	}
	// Each connection given back returns its token: Close holds them all
	// once none is lent.
	for range cap(p.tokens) {
		select {
		case p.tokens <- struct{}{}:
			continue
		case <-ctx.Done():
		}
		// The deadline fails the connection's reads and writes, now and
		// later, as pgconn's own cancellation does: its owner gets an
		// error and gives it back, and Release closes it.
		p.mu.Lock()
		n := len(p.lent)
		for _, c := range p.lent {
			_ = c.pg.Conn().SetDeadline(time.Now())
		}
		p.mu.Unlock()
		return fmt.Errorf("postgres: closing the connection pool: %d connections still lent were interrupted: %w", n, ctx.Err())
	}
	return nil
}

// poolConn is a connection lent by a pool.
type poolConn struct {
	*conn
	p        *pool
	released bool
}

// errReleased: a connection used after it was given back (it may be lent
// to another caller by then: nothing is sent on it).
var errReleased = errors.New("postgres: the connection was given back to the pool")

// Exec is conn's, refused once the connection is given back.
func (c *poolConn) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if c.released {
		return pgconn.CommandTag{}, errReleased
	}
	return c.conn.Exec(ctx, sql, args...)
}

// Query is conn's, refused once the connection is given back.
func (c *poolConn) Query(ctx context.Context, sql string, args ...any) (*rows, error) {
	if c.released {
		return nil, errReleased
	}
	return c.conn.Query(ctx, sql, args...)
}

// QueryRow is conn's, refused once the connection is given back.
func (c *poolConn) QueryRow(ctx context.Context, sql string, args ...any) *row {
	if c.released {
		return &row{err: errReleased}
	}
	return c.conn.QueryRow(ctx, sql, args...)
}

// SendBatch is conn's, refused once the connection is given back.
func (c *poolConn) SendBatch(ctx context.Context, b *batch) error {
	if c.released {
		return &notSentError{errReleased}
	}
	return c.conn.SendBatch(ctx, b)
}

// Release gives the connection back. One left in a transaction, busy,
// broken, with a statement out of date or past its lifetime is closed
// instead, and so is every one given back once the pool is closing.
func (c *poolConn) Release() {
	if c.released {
		return
	}
	c.released = true
	p := c.p
	now := p.now()
	keep := !c.stale && !c.pg.IsClosed() && !c.pg.IsBusy() && c.pg.TxStatus() == 'I' && now.Before(c.expires)
	p.mu.Lock()
	p.unlend(c.conn)
	if keep = keep && !p.closed; keep {
		p.idle = append(p.idle, idleConn{c: c.conn, since: now})
	}
	p.mu.Unlock()
	if !keep {
		closeConn(c.conn)
	}
	<-p.tokens
}

// Exec runs one statement on a connection of the pool.
func (p *pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer c.Release()
	return c.Exec(ctx, sql, args...)
}

// Query runs one query on a connection of the pool, lent until the rows
// are closed.
func (p *pool) Query(ctx context.Context, sql string, args ...any) (*rows, error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	r, err := c.Query(ctx, sql, args...)
	if err != nil {
		c.Release()
		return nil, err
	}
	r.release = c.Release
	return r, nil
}

// QueryRow runs one query on a connection of the pool.
func (p *pool) QueryRow(ctx context.Context, sql string, args ...any) *row {
	c, err := p.Acquire(ctx)
	if err != nil {
		return &row{err: err}
	}
	defer c.Release()
	return c.QueryRow(ctx, sql, args...)
}

// Begin starts a transaction on a connection of the pool (begin: "BEGIN"
// or a BEGIN with options), lent until it ends.
func (p *pool) Begin(ctx context.Context, begin string) (*tx, error) {
	c, err := p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := c.Exec(ctx, begin); err != nil {
		c.Release()
		return nil, err
	}
	return &tx{poolConn: c, ctx: ctx}, nil
}

// tx is a transaction on a connection lent by the pool.
type tx struct {
	*poolConn
	// ctx bounds every statement of the transaction (see bound).
	ctx context.Context
}

func (t *tx) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.poolConn.Exec(t.ctx, sql, args...)
}

func (t *tx) Query(_ context.Context, sql string, args ...any) (*rows, error) {
	return t.poolConn.Query(t.ctx, sql, args...)
}

func (t *tx) QueryRow(_ context.Context, sql string, args ...any) *row {
	return t.poolConn.QueryRow(t.ctx, sql, args...)
}

// bound is a querier whose statements run under ctx, whatever context
// they are given. The store's reads and writes hand their closures a
// querier (or a tx) bound to the read's or the write's own time limit
// (ReadTimeout, WriteTimeout): a closure passes on the context it was
// given, of which the bound one is a child, so the limit is at least as
// strict, and a closure cannot leave it out.
type bound struct {
	q   querier
	ctx context.Context
}

func (b bound) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return b.q.Exec(b.ctx, sql, args...)
}

func (b bound) Query(_ context.Context, sql string, args ...any) (*rows, error) {
	return b.q.Query(b.ctx, sql, args...)
}

func (b bound) QueryRow(_ context.Context, sql string, args ...any) *row {
	return b.q.QueryRow(b.ctx, sql, args...)
}

// SendBatch sends the batch on a connection (a batcher); any other querier
// refuses it.
func (b bound) SendBatch(_ context.Context, bt *batch) error {
	bq, ok := b.q.(batcher)
	if !ok {
		return fmt.Errorf("postgres: a batch on %T", b.q)
	}
	return bq.SendBatch(b.ctx, bt)
}

// Commit commits the transaction and gives the connection back.
func (t *tx) Commit(ctx context.Context) error {
	defer t.Release()
	tag, err := t.Exec(ctx, `COMMIT`)
	if err == nil && tag.String() == "ROLLBACK" {
		// COMMIT of a failed transaction rolls it back.
		err = errors.New("commit unexpectedly resulted in rollback")
	}
	return err
}

// Rollback rolls the transaction back, unless it ended, and gives the
// connection back (closed when the rollback failed).
func (t *tx) Rollback(ctx context.Context) error {
	if t.released {
		return nil
	}
	defer t.Release()
	return t.rollback(ctx)
}

// rollbackTimeout bounds a rollback, which callers send with a context
// that never ends (what they ran failed, maybe for the end of theirs).
var rollbackTimeout = 5 * time.Second

// rollback sends ROLLBACK on c within rollbackTimeout: a server that
// stopped answering (the network dropped) fails it, and the connection is
// closed, instead of holding it, and its caller, until the system's TCP
// timeout.
func (c *poolConn) rollback(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, rollbackTimeout)
	defer cancel()
	_, err := c.Exec(ctx, `ROLLBACK`)
	return err
}
