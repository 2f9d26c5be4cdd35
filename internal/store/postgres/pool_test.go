package postgres

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/pgtest"
)

// clock is a time the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// backendPID is the server process of c.
func backendPID(t *testing.T, c *poolConn) int64 {
	t.Helper()
	var n int64
	if err := c.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// acquirePID acquires a connection, notes its server process and gives
// it back.
func acquirePID(t *testing.T, p *pool) int64 {
	t.Helper()
	c, err := p.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	return backendPID(t, c)
}

// admin is a connection of the test's own to the database of p, outside
// the pool.
func admin(t *testing.T, p *pool) *conn {
	t.Helper()
	c, err := connect(t.Context(), p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeConn(c) })
	return c
}

// waitGone waits until none of pids is a server process any more.
func waitGone(t *testing.T, a *conn, pids ...int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int64
		if err := a.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::bigint[])`, pids).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the server processes %v still run", n, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// poolGoroutines counts the goroutines running the pool's code or pgconn's.
func poolGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "jackc/pgx/v5/pgconn") || strings.Contains(g, "store/postgres.(*pool)") {
			count++
		}
	}
	return count
}

// waitGoroutines waits until no more than want goroutines run the pool's
// or pgconn's code.
func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := poolGoroutines()
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines of the pool or pgconn left, want %d:\n%s", n, want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A connection past its lifetime is not closed while it is lent (what
// runs on it finishes), and is closed when given back or, given back
// before its end, when next taken.
func TestPoolConnLifetime(t *testing.T) {
	clk := newClock()
	p := testPoolWith(t, poolConfig{maxConns: 2, maxLifetime: time.Hour, maxIdle: 48 * time.Hour, healthCheck: time.Hour}, clk.Now)
	a := admin(t, p)
	ctx := t.Context()

	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := backendPID(t, c)
	clk.Add(2 * time.Hour) // past its lifetime, lent
	if pid := backendPID(t, c); pid != first {
		t.Fatalf("a lent connection changed under its user: %d, then %d", first, pid)
	}
	c.Release()
	waitGone(t, a, first)
	if len(p.idle) != 0 {
		t.Errorf("a connection given back past its lifetime was kept idle")
	}

	second := acquirePID(t, p) // opened now: an hour to live, idle
	if second == first {
		t.Fatal("the connection past its lifetime was lent again")
	}
	clk.Add(59 * time.Minute)
	if pid := acquirePID(t, p); pid != second {
		t.Fatalf("a connection within its lifetime was not reused (%d, then %d)", second, pid)
	}
	clk.Add(2 * time.Minute) // past its lifetime, idle
	if pid := acquirePID(t, p); pid == second {
		t.Fatal("an idle connection past its lifetime was lent again")
	}
	waitGone(t, a, second)

	// Past its lifetime while idle, it is closed by the health check too.
	third := acquirePID(t, p)
	clk.Add(61 * time.Minute)
	p.pruneIdle()
	waitGone(t, a, third)
	if len(p.idle) != 0 {
		t.Errorf("the health check kept %d idle connections past their lifetime", len(p.idle))
	}
}

// A connection idle for longer than maxIdle is closed by the health check,
// or when next taken.
func TestPoolConnIdleTime(t *testing.T) {
	clk := newClock()
	p := testPoolWith(t, poolConfig{maxConns: 2, maxLifetime: 48 * time.Hour, maxIdle: 10 * time.Minute, healthCheck: time.Hour}, clk.Now)
	a := admin(t, p)

	first := acquirePID(t, p)
	clk.Add(9 * time.Minute)
	p.pruneIdle()
	if pid := acquirePID(t, p); pid != first {
		t.Fatalf("a connection idle for less than maxIdle was not reused (%d, then %d)", first, pid)
	}
	clk.Add(11 * time.Minute)
	p.pruneIdle()
	waitGone(t, a, first)

	second := acquirePID(t, p)
	clk.Add(11 * time.Minute)
	if pid := acquirePID(t, p); pid == second {
		t.Fatal("a connection idle for longer than maxIdle was lent again")
	}
	waitGone(t, a, second)
}

// Each connection's lifetime is maxLifetime and a random part of the
// jitter.
func TestPoolLifetimeJitter(t *testing.T) {
	p := &pool{pc: poolConfig{maxLifetime: time.Hour, lifetimeJitter: 6 * time.Minute}}
	seen := map[time.Duration]bool{}
	for range 50 {
		d := p.lifetime()
		if d < time.Hour || d >= time.Hour+6*time.Minute {
			t.Fatalf("lifetime %v out of [1h, 1h6m)", d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Errorf("50 lifetimes, %d different: no jitter", len(seen))
	}
	p.pc.lifetimeJitter = 0
	if d := p.lifetime(); d != time.Hour {
		t.Errorf("no jitter: lifetime %v", d)
	}
}

// Close refuses new acquisitions at once (those waiting too), lets the
// lent connections finish what they run, waits for them and closes them;
// nothing of the pool keeps running.
func TestPoolCloseWaitsForLent(t *testing.T) {
	before := poolGoroutines()
	cfg, _, err := parseURL(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(cfg, poolConfig{maxConns: 2})
	ctx := t.Context()
	x, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	y, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pidX, pidY := backendPID(t, x), backendPID(t, y)
	waiting := make(chan error, 1)
	go func() {
		c, err := p.Acquire(ctx) // waits: the pool is full
		if err == nil {
			c.Release()
		}
		waiting <- err
	}()
	time.Sleep(50 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- p.Close(ctx) }()
	select {
	case err := <-waiting:
		if !errors.Is(err, errPoolClosed) {
			t.Errorf("an Acquire waiting when the pool closed: %v, want errPoolClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an Acquire waiting for a connection still waits after Close")
	}
	if _, err := p.Acquire(ctx); !errors.Is(err, errPoolClosed) {
		t.Errorf("Acquire while closing: %v, want errPoolClosed", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with two connections lent", err)
	case <-time.After(200 * time.Millisecond):
	}
	// What runs on a lent connection finishes.
	if _, err := x.Exec(ctx, `SELECT pg_sleep(0.1)`); err != nil {
		t.Errorf("a lent connection failed while the pool closed: %v", err)
	}
	x.Release()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with one connection lent", err)
	case <-time.After(100 * time.Millisecond):
	}
	y.Release()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return once every connection was given back")
	}
	a, err := connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn(a)
	waitGone(t, a, pidX, pidY)
	closeConn(a)
	waitGoroutines(t, before)
	if err := p.Close(ctx); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// A Close whose wait runs out interrupts what still runs on the lent
// connections (an error for their users), says so, and leaves nothing
// running.
func TestPoolCloseInterruptsAfterItsWait(t *testing.T) {
	before := poolGoroutines()
	cfg, _, err := parseURL(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(cfg, poolConfig{maxConns: 2})
	ctx := t.Context()
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := backendPID(t, c)
	ran := make(chan error, 1)
	go func() {
		defer c.Release()
		_, err := c.Exec(context.Background(), `SELECT pg_sleep(60)`)
		ran <- err
	}()
	time.Sleep(100 * time.Millisecond)
	wait, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = p.Close(wait)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 connections still lent") {
		t.Errorf("Close with a connection busy past its wait: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %v", d)
	}
	select {
	case err := <-ran:
		if err == nil {
			t.Error("the statement interrupted by Close succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the statement still runs after Close interrupted it")
	}
	a, err := connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, a, pid)
	closeConn(a)
	waitGoroutines(t, before)
}

// The store's Close lets a write under way commit (and answer) before it
// closes the connections; calls after it are refused.
func TestDBCloseWaitsForAWrite(t *testing.T) {
	url := pgtest.Database(t)
	d, err := Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := t.Context()
	inside, release := make(chan struct{}), make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		wrote <- d.UpdateState(ctx, "ns", "k", func([]byte) ([]byte, error) {
			close(inside)
			<-release
			return []byte(`"v"`), nil
		})
	}()
	<-inside
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a write was under way", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := d.GetState(ctx, "ns", "k"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("a read after Close: %v, want ErrClosed", err)
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatalf("the write under way when Close began: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	again, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if v, err := again.GetState(ctx, "ns", "k"); err != nil || string(v) != `"v"` {
		t.Fatalf("the write answered before Close: %q, %v", v, err)
	}
}

// A connection the server ended (pg_terminate_backend) is never lent
// again: a statement sent on it fails with an error (never a value), and
// one taken after a second idle is pinged first, so that nothing fails.
func TestPoolTerminatedConnections(t *testing.T) {
	clk := newClock()
	p := testPoolWith(t, poolConfig{maxConns: 3}, clk.Now)
	a := admin(t, p)
	ctx := t.Context()
	fill := func() []int64 {
		var cs []*poolConn
		var pids []int64
		for range 3 {
			c, err := p.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
			pids = append(pids, backendPID(t, c))
		}
		for _, c := range cs {
			c.Release()
		}
		return pids
	}
	terminate := func(pids []int64) {
		if _, err := a.Exec(ctx, `SELECT pg_terminate_backend(pid::int) FROM unnest($1::bigint[]) AS pid`, pids); err != nil {
			t.Fatal(err)
		}
		waitGone(t, a, pids...)
	}
	check := func(old []int64, maxFailures int) {
		t.Helper()
		failures := 0
		for range 8 {
			answered, pid := false, int64(0)
			err := p.QueryRow(ctx, `SELECT true, pg_backend_pid()`).Scan(&answered, &pid)
			switch {
			case err != nil:
				failures++
				if answered || pid != 0 {
					t.Errorf("a failed query set its values: %v, %d", answered, pid)
				}
			case !answered || slices.Contains(old, pid):
				t.Fatalf("answered %v on server process %d, one of the ended %v", answered, pid, old)
			}
		}
		if failures > maxFailures {
			t.Errorf("%d queries failed, want at most %d (one per ended connection)", failures, maxFailures)
		}
	}

	// Used within pingAfter: each ended connection fails one statement.
	old := fill()
	terminate(old)
	check(old, len(old))

	// Idle for longer: pinged, replaced, nothing fails.
	old = fill()
	terminate(old)
	clk.Add(2 * pingAfter)
	check(old, 0)
}

// While the server is down every statement fails, in about the connect
// timeout at most; once it is back the pool lends new connections only.
func TestPoolServerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of its own")
	}
	pgtest.Shared(t) // skips (or fails on CI) without PostgreSQL
	cl, err := pgtest.Start(pgtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	cfg, _, err := parseURL(cl.URL("postgres") + "&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	p := newPool(cfg, poolConfig{maxConns: 2})
	defer p.Close(context.Background())
	ctx := t.Context()
	lent, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := []int64{backendPID(t, lent), acquirePID(t, p)}
	if err := cl.StopServer(false); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		start := time.Now()
		answered := false
		err := p.QueryRow(ctx, `SELECT true`).Scan(&answered)
		if err == nil || answered {
			t.Fatalf("query %d with the server down: %v, %v", i, answered, err)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("query %d took %v to fail", i, d)
		}
	}
	if err := lent.QueryRow(ctx, `SELECT true`).Scan(new(bool)); err == nil {
		t.Fatal("a statement on a connection lent across the stop succeeded")
	}
	lent.Release()
	if err := cl.StartServer(); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		var pid int64
		if err := p.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatalf("after the restart: %v", err)
		}
		if slices.Contains(old, pid) {
			t.Fatalf("server process %d from before the restart", pid)
		}
	}
}

// A connection given back is not used again through its old holder: it may
// be lent to another caller by then.
func TestPoolConnAfterRelease(t *testing.T) {
	p := testPool(t, 1)
	ctx := t.Context()
	c, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	other, err := p.Acquire(ctx) // the same connection, lent again
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if _, err := other.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `ROLLBACK`); !errors.Is(err, errReleased) {
		t.Errorf("Exec after Release: %v", err)
	}
	if err := c.QueryRow(ctx, `SELECT 1`).Scan(new(int64)); !errors.Is(err, errReleased) {
		t.Errorf("QueryRow after Release: %v", err)
	}
	if _, err := c.Query(ctx, `SELECT 1`); !errors.Is(err, errReleased) {
		t.Errorf("Query after Release: %v", err)
	}
	b := &batch{}
	b.Queue(`ROLLBACK`)
	if err := c.SendBatch(ctx, b); !errors.Is(err, errReleased) {
		t.Errorf("SendBatch after Release: %v", err)
	}
	if other.TxStatus() != 'T' {
		t.Errorf("the other holder's transaction: status %c, want T", other.TxStatus())
	}
}

// scanValue reads the types it knows and refuses every other one, leaving
// the destination as it was: a new column type cannot be read as a zero
// value (false, "", 0) by a destination nobody taught it.
func TestScanValueTypes(t *testing.T) {
	type (
		myBool   bool
		myString string
		myInt    int64
	)
	var status store.ApprovalStatus
	known := map[reflect.Type]bool{}
	for _, d := range []any{new(*string), new(string), new(int64), new(int), new(int32), new(bool)} {
		known[reflect.TypeOf(d)] = true
	}
	dests := []any{
		new(*string), new(string), new(int64), new(int), new(int32), new(bool),
		new(myBool), new(myString), new(myInt), &status,
		new(int8), new(int16), new(uint), new(uint32), new(uint64), new(float32), new(float64),
		new([]byte), new([]string), new([]int64), new(time.Time), new(time.Duration), new(any),
		new(*int64), new(*bool), new(map[string]any), new(struct{}), new(complex128), new(uintptr),
		new(error), new(chan int), new([2]byte), new(*myBool),
		true, "t", int64(1), nil, (*bool)(nil), (*string)(nil), (**string)(nil),
	}
	for _, d := range dests {
		if known[reflect.TypeOf(d)] {
			delete(known, reflect.TypeOf(d))
			if !scannable(d) {
				t.Errorf("%T: not scannable", d)
			}
			continue
		}
		for _, v := range [][]byte{[]byte("t"), []byte("1"), []byte("x"), nil} {
			var before any
			if d != nil && reflect.TypeOf(d).Kind() == reflect.Pointer && !reflect.ValueOf(d).IsNil() {
				before = reflect.ValueOf(d).Elem().Interface()
			}
			err := scanValue(v, d)
			if err == nil {
				t.Errorf("%T from %q: no error", d, v)
				continue
			}
			if !strings.Contains(err.Error(), "cannot scan into") {
				t.Errorf("%T: error %q does not say the type is unknown", d, err)
			}
			if before != nil && !reflect.DeepEqual(reflect.ValueOf(d).Elem().Interface(), before) {
				t.Errorf("%T from %q: set to %v despite the error", d, v, reflect.ValueOf(d).Elem().Interface())
			}
		}
	}
	if len(known) != 0 {
		t.Fatalf("types not tried: %v", known)
	}
	// The known ones read their values, and refuse what does not parse
	// without changing the destination.
	b, n, s := true, int64(7), "kept"
	for _, c := range []struct {
		v    string
		dest any
		want any
	}{
		{"f", &b, false}, {"t", &b, true}, {"yes", &b, true}, {"", &b, true},
		{"42", &n, int64(42)}, {"4.5", &n, int64(42)}, {"", &n, int64(42)},
		{"x", &s, "x"},
	} {
		_ = scanValue([]byte(c.v), c.dest)
		if got := reflect.ValueOf(c.dest).Elem().Interface(); got != c.want {
			t.Errorf("%q into %T: %v, want %v", c.v, c.dest, got, c.want)
		}
	}
	// A row with one destination of an unknown type sets none of them.
	x, y := "kept", int64(7)
	if err := scanValues([][]byte{[]byte("new"), []byte("1"), []byte("t")}, []any{&x, &y, new(myBool)}); err == nil || x != "kept" || y != 7 {
		t.Errorf("a row with an unknown destination: %v, set %q %d", err, x, y)
	}
}

func TestParseURLPoolSettings(t *testing.T) {
	const base = "postgres://u:secret@localhost:5/db?"
	_, pc, err := parseURL(base + "application_name=x")
	if err != nil {
		t.Fatal(err)
	}
	want := poolConfig{maxConns: pc.maxConns, maxLifetime: time.Hour, lifetimeJitter: 6 * time.Minute, maxIdle: time.Minute, healthCheck: 5 * time.Second}
	if pc != want {
		t.Errorf("defaults %+v, want %+v", pc, want)
	}
	cfg, pc, err := parseURL(base + "pool_max_conn_lifetime=30m&pool_max_conn_idle_time=90s&pool_health_check_period=2s" +
		"&pool_min_conns=1&pool_min_idle_conns=1&pool_ping_timeout=1s&default_query_exec_mode=exec&description_cache_capacity=1")
	if err != nil {
		t.Fatal(err)
	}
	want = poolConfig{maxConns: pc.maxConns, maxLifetime: 30 * time.Minute, lifetimeJitter: 3 * time.Minute, maxIdle: 90 * time.Second, healthCheck: 2 * time.Second}
	if pc != want {
		t.Errorf("settings %+v, want %+v", pc, want)
	}
	if len(cfg.RuntimeParams) != 0 {
		t.Errorf("sent to the server: %v", cfg.RuntimeParams)
	}
	if _, pc, err := parseURL(base + "pool_max_conn_lifetime=2h&pool_max_conn_lifetime_jitter=0"); err != nil || pc.lifetimeJitter != 0 || pc.maxLifetime != 2*time.Hour {
		t.Errorf("no jitter: %+v, %v", pc, err)
	}
	for _, bad := range []string{
		"pool_max_conn_lifetime=x", "pool_max_conn_lifetime=0", "pool_max_conn_lifetime=-1h", "pool_max_conn_lifetime=60",
		"pool_max_conn_idle_time=0s", "pool_health_check_period=-5s", "pool_max_conn_lifetime_jitter=-1m",
		"pool_max_conn_lifetme=1h", "pool_size=3",
	} {
		name, _, _ := strings.Cut(bad, "=")
		_, _, err := parseURL(base + bad)
		switch {
		case err == nil:
			t.Errorf("%s: no error", bad)
		case !strings.Contains(err.Error(), name):
			t.Errorf("%s: the error does not name the parameter: %v", bad, err)
		case strings.Contains(err.Error(), "secret"):
			t.Errorf("%s: the error quotes the password: %v", bad, err)
		}
	}
}

// The pool knows which connections are lent (Close interrupts those),
// whatever order they come back in.
func TestPoolLentBookkeeping(t *testing.T) {
	p := testPool(t, 4)
	ctx := t.Context()
	var cs []*poolConn
	for range 4 {
		c, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	check := func(want ...*poolConn) {
		t.Helper()
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.lent) != len(want) {
			t.Fatalf("%d lent, want %d", len(p.lent), len(want))
		}
		for i, c := range p.lent {
			if c.lentAt != i {
				t.Errorf("lent[%d] says it is at %d", i, c.lentAt)
			}
		}
		for _, w := range want {
			if !slices.Contains(p.lent, w.conn) {
				t.Errorf("a lent connection is not in the list")
			}
		}
	}
	check(cs...)
	cs[1].Release()
	check(cs[0], cs[2], cs[3])
	cs[0].Release()
	check(cs[2], cs[3])
	again, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(cs[2], cs[3], again)
	cs[3].Release()
	again.Release()
	check(cs[2])
	cs[2].Release()
	check()
}

// silentProxy forwards TCP connections to the test cluster's socket until
// it goes silent: from then on it neither reads nor writes, as a network
// that drops every packet.
type silentProxy struct {
	ln     net.Listener
	silent chan struct{}
	once   sync.Once
}

func newSilentProxy(t *testing.T) *silentProxy {
	t.Helper()
	c := pgtest.Shared(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sp := &silentProxy{ln: ln, silent: make(chan struct{})}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if err != nil {
				return
			}
			select {
			case <-sp.silent:
				return // dropped, and nothing more is read
			default:
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
	}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("unix", filepath.Join(c.Socket, ".s.PGSQL."+strconv.Itoa(c.Port)))
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Add(2)
			go pipe(out, in)
			go pipe(in, out)
		}
	}()
	return sp
}

func (sp *silentProxy) goSilent() { sp.once.Do(func() { close(sp.silent) }) }

// within runs fn and fails the test when it has not returned after d.
func within(t *testing.T, d time.Duration, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s: still waiting after %v", what, d)
		return nil
	}
}

// When the server stops answering (the network drops everything), a
// rollback, sent with a context that never ends, fails in rollbackTimeout,
// and a connection taken after a second idle fails its ping in the connect
// timeout: neither holds its caller until the system's TCP timeout, and
// neither connection is lent again.
func TestPoolSilentServer(t *testing.T) {
	defer func(d time.Duration) { rollbackTimeout = d }(rollbackTimeout)
	rollbackTimeout = 300 * time.Millisecond
	cfg, _, err := parseURL(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	sp := newSilentProxy(t)
	cfg.Host, cfg.Port, cfg.Fallbacks = "127.0.0.1", uint16(sp.ln.Addr().(*net.TCPAddr).Port), nil
	cfg.ConnectTimeout = 500 * time.Millisecond
	clk := newClock()
	p := newPoolClock(cfg, poolConfig{maxConns: 2}, clk.Now)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	ctx := t.Context()
	var two []*poolConn
	for range 2 {
		c, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		two = append(two, c)
	}
	for _, c := range two {
		c.Release()
	}
	tx, err := p.Begin(ctx, `BEGIN`) // on one of them, the other idle
	if err != nil {
		t.Fatal(err)
	}
	if len(p.idle) != 1 {
		t.Fatalf("%d idle, want 1", len(p.idle))
	}
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	sp.goSilent()
	if err := within(t, 10*time.Second, "a rollback on a silent server", func() error {
		return tx.Rollback(context.Background())
	}); err == nil {
		t.Error("a rollback on a silent server succeeded")
	}
	clk.Add(2 * pingAfter)
	if err := within(t, 10*time.Second, "an Acquire on a silent server", func() error {
		c, err := p.Acquire(context.Background())
		if err == nil {
			c.Release()
		}
		return err
	}); err == nil {
		t.Error("a connection was lent by a silent server")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) != 0 || len(p.lent) != 0 {
		t.Errorf("after the failures: %d idle, %d lent, want none", len(p.idle), len(p.lent))
	}
}
