// Package limits keeps the daemon from being worn down by what it serves:
// submission quotas (requests and bytes per minute, per agent session, per
// agent and for all agents together), a throttle on wrong credentials that
// slows guessing without ever refusing the right credential, and alarms
// (the database's size) that a person is told about.
//
// Everything here is in memory and decides only whether a request is served
// now or told to come back (429 with Retry-After); it never judges an action.
package limits

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
)

// Rate is a token bucket: PerMinute tokens a minute flow into a bucket that
// holds at most Burst. A zero or negative PerMinute is no limit.
type Rate struct {
	PerMinute float64
	Burst     float64
}

func (r Rate) off() bool { return r.PerMinute <= 0 }

// Scope is the two quotas of one scope: requests and request bytes.
type Scope struct {
	Requests Rate
	Bytes    Rate
}

// Config configures Quotas.
type Config struct {
	Session, Agent, All Scope
	// MaxKeys bounds the sessions and agents remembered per scope (default
	// 10,000). Past it, idle (full) buckets are forgotten first.
	MaxKeys int
}

// Quotas are the submission quotas. Safe for concurrent use.
type Quotas struct {
	cfg Config
	clk clock.Clock
	mu  sync.Mutex
	ses map[string]*pair
	agt map[string]*pair
	all pair
	// pool, when set, holds the buckets, shared by several instances
	// (shared.go); credits is this instance's credit on them.
	pool    Pool
	credits map[string]*credit
	drawMu  sync.Mutex
}

type bucket struct {
	level float64
	last  time.Time
	init  bool
}

type pair struct{ req, bytes bucket }

// NewQuotas returns quotas with cfg on clk (the real clock when nil).
func NewQuotas(cfg Config, clk clock.Clock) *Quotas {
	if clk == nil {
		clk = clock.Real{}
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = 10000
	}
	return &Quotas{cfg: cfg, clk: clk, ses: map[string]*pair{}, agt: map[string]*pair{}, credits: map[string]*credit{}}
}

// refill brings b up to now under r.
func (b *bucket) refill(r Rate, now time.Time) {
	if !b.init {
		b.level, b.last, b.init = r.Burst, now, true
		return
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.level = math.Min(r.Burst, b.level+dt*r.PerMinute/60)
		b.last = now
	}
}

// wait is how long until b can take cost (0: now). A cost above the burst
// is taken from a full bucket, which then goes into debt: a request larger
// than the burst is served, and the next ones wait for the debt to be paid.
func (b *bucket) wait(r Rate, cost float64) time.Duration {
	if r.off() {
		return 0
	}
	need := math.Min(cost, r.Burst)
	if b.level >= need {
		return 0
	}
	return time.Duration((need - b.level) / (r.PerMinute / 60) * float64(time.Second))
}

func (b *bucket) take(r Rate, cost float64) {
	if !r.off() {
		b.level -= cost
	}
}

func (b *bucket) full(r Rate) bool { return r.off() || b.level >= r.Burst }

// Denied says why a request was refused and when to come back.
type Denied struct {
	// Scope is "session", "agent" or "all"; What is "requests" or "bytes".
	Scope, What string
	// RetryAfter is how long until the request would be served.
	RetryAfter time.Duration
}

// keyOf bounds the memory a caller-chosen name takes.
func keyOf(s string) string {
	if len(s) <= 64 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "#" + hex.EncodeToString(sum[:16])
}

// Take charges one request of size bytes to agent's session, to agent and
// to everyone, if every quota has room; otherwise it charges nothing and
// says which quota refused and for how long (the longest wait of all).
func (q *Quotas) Take(agent, session string, size int64) *Denied {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pool != nil {
		return q.takeShared(agent, session, size)
	}
	now := q.clk.Now()
	ak, sk := keyOf(agent), keyOf(agent)+"\x00"+keyOf(session)
	sp := q.get(q.ses, sk, q.cfg.Session, now)
	ap := q.get(q.agt, ak, q.cfg.Agent, now)
	q.all.req.refill(q.cfg.All.Requests, now)
	q.all.bytes.refill(q.cfg.All.Bytes, now)
	var worst *Denied
	check := func(scope string, p *pair, sc Scope) {
		for _, c := range []struct {
			what string
			b    *bucket
			r    Rate
			cost float64
		}{{"requests", &p.req, sc.Requests, 1}, {"bytes", &p.bytes, sc.Bytes, float64(size)}} {
			if w := c.b.wait(c.r, c.cost); w > 0 && (worst == nil || w > worst.RetryAfter) {
				worst = &Denied{Scope: scope, What: c.what, RetryAfter: w}
			}
		}
	}
	check("session", sp, q.cfg.Session)
	check("agent", ap, q.cfg.Agent)
	check("all", &q.all, q.cfg.All)
	if worst != nil {
		return worst
	}
	for _, c := range []struct {
		p  *pair
		sc Scope
	}{{sp, q.cfg.Session}, {ap, q.cfg.Agent}, {&q.all, q.cfg.All}} {
		c.p.req.take(c.sc.Requests, 1)
		c.p.bytes.take(c.sc.Bytes, float64(size))
	}
	return nil
}

// Full reports, before a request is read, whether everyone's quota has no
// room for one more request of size bytes (the body's declared length; 1
// when it is not known), so that a body need not be read to be refused.
func (q *Quotas) Full(size int64) *Denied {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pool != nil {
		return q.fullShared()
	}
	now := q.clk.Now()
	q.all.req.refill(q.cfg.All.Requests, now)
	q.all.bytes.refill(q.cfg.All.Bytes, now)
	if w := q.all.req.wait(q.cfg.All.Requests, 1); w > 0 {
		return &Denied{Scope: "all", What: "requests", RetryAfter: w}
	}
	if w := q.all.bytes.wait(q.cfg.All.Bytes, float64(max(size, 1))); w > 0 {
		return &Denied{Scope: "all", What: "bytes", RetryAfter: w}
	}
	return nil
}

// get returns the bucket pair of key in m, refilled to now, making room in
// m when it is full.
func (q *Quotas) get(m map[string]*pair, key string, sc Scope, now time.Time) *pair {
	p, ok := m[key]
	if !ok {
		if len(m) >= q.cfg.MaxKeys {
			q.evict(m, sc, now)
		}
		p = &pair{}
		m[key] = p
	}
	p.req.refill(sc.Requests, now)
	p.bytes.refill(sc.Bytes, now)
	return p
}

// evict forgets the keys whose buckets are full again (a new bucket starts
// full, so nothing is lost), and, if that is not enough, a quarter of the
// rest. A forgotten key in debt starts afresh; the "all" scope still holds.
func (q *Quotas) evict(m map[string]*pair, sc Scope, now time.Time) {
	for k, p := range m {
		p.req.refill(sc.Requests, now)
		p.bytes.refill(sc.Bytes, now)
		if p.req.full(sc.Requests) && p.bytes.full(sc.Bytes) {
			delete(m, k)
		}
	}
	if len(m) < q.cfg.MaxKeys*3/4 {
		return
	}
	n := len(m) / 4
	for k := range m {
		if n == 0 {
			break
		}
		delete(m, k)
		n--
	}
}
