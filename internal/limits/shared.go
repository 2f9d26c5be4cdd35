package limits

// Shared quotas: several daemons on one database (a fleet) draw on one
// set of buckets. The buckets' levels live in the store; an instance
// holds credit it took from them (a block of tokens, at most half of what
// a bucket holds beyond the request, usable for a second) and serves
// requests from it without a round trip. A request its credit does not
// cover takes more, for all the buckets it needs in one transaction; when
// a bucket has no room the request is refused with the wait the shared
// bucket says. Credit not used is given back with the bucket's next
// request; an instance that stops or dies keeps it (stricter: the tokens
// come back as the bucket refills).

import (
	"context"
	"encoding/json"
	"math"
	"time"
)

// CreditTTL is how long credit may be used.
var CreditTTL = time.Second

// PoolTimeout bounds a round trip to the shared buckets.
var PoolTimeout = 2 * time.Second

// Draw asks a shared bucket for tokens.
type Draw struct {
	// Key names the bucket ("session|…|requests").
	Key  string
	Rate Rate
	// Need is what the request costs; Want what to take if the bucket has
	// room (Want ≥ Need). Back is unused credit given back first.
	Need, Want, Back float64
}

// Drawn is what a bucket gave: Granted tokens (0: refused), and, when
// refused, how long until it has room for Need.
type Drawn struct {
	Granted float64
	Wait    time.Duration
}

// Pool draws from the shared buckets atomically, all in one transaction,
// in the order asked.
type Pool func(ctx context.Context, draws []Draw) ([]Drawn, error)

// sharedBucket is a bucket's level as stored.
type sharedBucket struct {
	Level float64 `json:"l"`
	Last  int64   `json:"t"` // unix nanoseconds
	// Rate is the bucket's rate when it was last drawn on (FullBucket).
	PerMinute float64 `json:"r,omitempty"`
	Burst     float64 `json:"b,omitempty"`
}

// FullBucket reports whether a stored bucket has refilled to its burst by
// now: it is then the same as no bucket, and may be forgotten.
func FullBucket(stored []byte, now time.Time) bool {
	var b sharedBucket
	if json.Unmarshal(stored, &b) != nil || b.Burst <= 0 {
		return false
	}
	dt := float64(now.UnixNano()-b.Last) / float64(time.Second)
	return b.Level+math.Max(0, dt)*b.PerMinute/60 >= b.Burst
}

// DrawBucket is a Pool's work on one stored bucket (JSON, or nil for a
// full one) at now: it refills it, takes Back, and grants Need plus up to
// half the room beyond it (up to Want) if the bucket holds Need (or is
// full, for a request larger than the burst, which then leaves it in
// debt, as an instance's own bucket does). It returns the new stored
// bucket.
func DrawBucket(stored []byte, d Draw, now time.Time) ([]byte, Drawn, error) {
	b := sharedBucket{Level: d.Rate.Burst, Last: now.UnixNano()}
	if stored != nil {
		if err := json.Unmarshal(stored, &b); err != nil {
			b = sharedBucket{Level: 0, Last: now.UnixNano()} // unreadable: empty, refills (fail closed)
		}
	}
	if dt := float64(now.UnixNano()-b.Last) / float64(time.Second); dt > 0 {
		b.Level = math.Min(d.Rate.Burst, b.Level+dt*d.Rate.PerMinute/60)
		b.Last = now.UnixNano()
	}
	b.Level = math.Min(d.Rate.Burst, b.Level+math.Max(0, d.Back))
	b.PerMinute, b.Burst = d.Rate.PerMinute, d.Rate.Burst
	var out Drawn
	need := math.Min(d.Need, d.Rate.Burst)
	if b.Level >= need {
		extra := math.Max(0, math.Min(d.Want-d.Need, (b.Level-d.Need)/2))
		out.Granted = d.Need + extra
		b.Level -= out.Granted
	} else if d.Rate.PerMinute > 0 {
		out.Wait = time.Duration((need - b.Level) / (d.Rate.PerMinute / 60) * float64(time.Second))
	}
	raw, err := json.Marshal(b)
	return raw, out, err
}

// SetPool makes the quotas draw on shared buckets through p (nil: each
// instance's own buckets).
func (q *Quotas) SetPool(p Pool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pool = p
}

// credit is an instance's credit on a shared bucket.
type credit struct {
	have    float64
	until   time.Time
	granted float64   // what the last draw gave
	denied  time.Time // refused until (the "all" buckets: Full)
}

// need is one bucket a request is charged to.
type need struct {
	scope, what string
	key         string
	r           Rate
	cost        float64
	c           *credit
}

// needs lists the buckets of a request. Callers hold q.mu.
func (q *Quotas) needs(agent, session string, size int64, now time.Time) []need {
	ak, sk := keyOf(agent), keyOf(agent)+"\x00"+keyOf(session)
	var ns []need
	for _, s := range []struct {
		scope, key string
		sc         Scope
	}{{"session", "session|" + sk, q.cfg.Session}, {"agent", "agent|" + ak, q.cfg.Agent}, {"all", "all", q.cfg.All}} {
		for _, w := range []struct {
			what string
			r    Rate
			cost float64
		}{{"requests", s.sc.Requests, 1}, {"bytes", s.sc.Bytes, float64(size)}} {
			if w.r.off() {
				continue
			}
			key := s.key + "|" + w.what
			c := q.credits[key]
			if c == nil {
				if len(q.credits) >= 4*q.cfg.MaxKeys {
					q.sweepCredits(now)
				}
				c = &credit{}
				q.credits[key] = c
			}
			ns = append(ns, need{s.scope, w.what, key, w.r, w.cost, c})
		}
	}
	return ns
}

// covered reports whether n's credit covers it at now.
func (n *need) covered(now time.Time) bool { return n.c.have >= n.cost && !now.After(n.c.until) }

// takeShared is Take with a pool. Callers hold q.mu; it is released for
// the round trip (draws are made one at a time: q.drawMu) and taken again.
func (q *Quotas) takeShared(agent, session string, size int64) *Denied {
	now := q.clk.Now()
	ns := q.needs(agent, session, size, now)
	all := func() bool {
		for i := range ns {
			if !ns[i].covered(now) {
				return false
			}
		}
		return true
	}
	if !all() {
		q.mu.Unlock()
		q.drawMu.Lock()
		q.mu.Lock()
		d := q.drawLocked(ns, now)
		q.drawMu.Unlock()
		if d != nil {
			return d
		}
		if !all() { // used by concurrent requests meanwhile: refused (stricter)
			return &Denied{Scope: "all", What: "requests", RetryAfter: 100 * time.Millisecond}
		}
	}
	for i := range ns {
		ns[i].c.have -= ns[i].cost
	}
	return nil
}

// drawLocked draws on the shared buckets for the needs not covered.
// Callers hold q.drawMu and q.mu; q.mu is released for the round trip.
func (q *Quotas) drawLocked(ns []need, now time.Time) *Denied {
	var (
		draws []Draw
		idx   []int
	)
	for i := range ns {
		n := &ns[i]
		if n.covered(now) {
			continue
		}
		used := math.Max(0, n.c.granted-n.c.have)
		d := Draw{Key: n.key, Rate: n.r, Need: n.cost, Want: math.Max(n.cost, math.Min(2*used, n.r.Burst))}
		if n.c.have > 0 {
			d.Back = n.c.have
		}
		n.c.have, n.c.granted = 0, 0 // given back, or taken by the draw
		draws = append(draws, d)
		idx = append(idx, i)
	}
	if len(draws) == 0 {
		return nil
	}
	pool := q.pool
	q.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), PoolTimeout)
	got, err := pool(ctx, draws)
	cancel()
	q.mu.Lock()
	if err != nil || len(got) != len(draws) {
		// The shared buckets cannot be read: refused for now (fail closed;
		// the client comes back). What was given back is lost (stricter).
		return &Denied{Scope: "all", What: "requests", RetryAfter: time.Second}
	}
	var worst *Denied
	for j, i := range idx {
		n := &ns[i]
		n.c.have, n.c.granted, n.c.until = got[j].Granted, got[j].Granted, now.Add(CreditTTL)
		if got[j].Granted < n.cost {
			n.c.denied = now.Add(got[j].Wait)
			if worst == nil || got[j].Wait > worst.RetryAfter {
				worst = &Denied{Scope: n.scope, What: n.what, RetryAfter: max(got[j].Wait, time.Millisecond)}
			}
		}
	}
	return worst
}

// sweepCredits forgets expired credit (it is not given back: stricter).
func (q *Quotas) sweepCredits(now time.Time) {
	for k, c := range q.credits {
		if now.After(c.until) {
			delete(q.credits, k)
		}
	}
}

// fullShared is Full with a pool: the "all" buckets as last drawn.
func (q *Quotas) fullShared() *Denied {
	now := q.clk.Now()
	for _, what := range []string{"requests", "bytes"} {
		if c := q.credits["all|"+what]; c != nil && now.Before(c.denied) {
			return &Denied{Scope: "all", What: what, RetryAfter: c.denied.Sub(now)}
		}
	}
	return nil
}
