package usage

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

// Shared counting: several processes count the same agents on one database
// (a fleet of daemons on PostgreSQL). Write-behind alone lets each of them
// admit calls the others counted but have not flushed yet, so the fleet
// could together exceed a limit by what each admits in a flush interval.
// With a Leaser, a rate limit's calls are admitted only against a lease:
// a block of the limit's room that the store grants atomically (under the
// window's lock) and records at once in the shared window. A process
// admits calls from its lease without a round trip; when the lease is used
// up or has expired it asks for another. The store grants at most half of
// the room left (at least one call while there is room), so far from the
// limit a lease covers many calls and at the edge every call is reserved
// through the store: the fleet together never admits more than the limit.
//
// A lease is recorded in the bucket of the end of its validity (calls made
// under it count as late as they may be: stricter, never looser), and what
// a process did not use is given back by its next flush. A process that
// dies holding a lease leaves it counted until it slides out of the window
// (stricter). Calls over a limit that still run (notify_only, ask) are
// counted write-behind, as without a leaser.

// LeaseTTL is how long a lease may be used.
var LeaseTTL = time.Second

// maxAttempts bounds how often a check asks for leases again when
// concurrent checks used them up first; past it the limit counts as reached
// (stricter, never looser).
const maxAttempts = 8

// maxLease bounds the calls one lease asks for.
const maxLease = 256

// LeaseRequest asks the store for room in a window.
type LeaseRequest struct {
	// Want is how many calls the lease should cover (the store may grant
	// fewer, or none).
	Want int
	// Max is the limit, Window its window.
	Max    int
	Window time.Duration
	// Until is the end of the lease's validity (unix nanoseconds).
	Until int64
	// Return gives back the unused part of an earlier lease (Count calls
	// recorded in the bucket ending at End), when Count > 0.
	Return Bucket
}

// Lease is what the store granted.
type Lease struct {
	// Granted is how many calls the lease covers (0: the window is full).
	Granted int
	// Count is the window's count after the grant, every process's.
	Count int
	// Buckets are the stored window after the grant.
	Buckets []Bucket
}

// KeyedLease is a lease request for the stored window Key (WindowKey).
type KeyedLease struct {
	Key string
	LeaseRequest
}

// Leaser takes leases of stored windows atomically, all in one transaction
// (a check that needs several leases makes one round trip), and returns
// them in the order asked.
type Leaser func(ctx context.Context, reqs []KeyedLease) ([]Lease, error)

// LeaseWindow is a Leaser's work on a stored window (JSON buckets, or
// nil): it gives back req.Return, drops what slid out of the window at
// now, and grants room. It returns the new stored window.
func LeaseWindow(stored []byte, req LeaseRequest, now time.Time) ([]byte, Lease, error) {
	var bs []Bucket
	if stored != nil {
		if err := json.Unmarshal(stored, &bs); err != nil {
			// An unreadable window: counted as full until rewritten by a
			// flush (fail closed), and left as it is.
			return stored, Lease{Count: req.Max}, err
		}
	}
	bs = giveBack(bs, req.Return)
	from := now.UnixNano() - int64(req.Window)
	kept := bs[:0]
	n := 0
	for _, b := range bs {
		if b.End > from && b.Count > 0 {
			kept = append(kept, b)
			n += b.Count
		}
	}
	bs = kept
	l := Lease{Count: n}
	if room := req.Max - n; room > 0 && req.Want > 0 {
		l.Granted = min(req.Want, max(1, room/2))
		end := (req.Until/bucketSize(req.Window) + 1) * bucketSize(req.Window)
		i, found := slices.BinarySearchFunc(bs, end, func(b Bucket, e int64) int { return cmpInt64(b.End, e) })
		if found {
			bs[i].Count += l.Granted
		} else {
			bs = slices.Insert(bs, i, Bucket{End: end, Count: l.Granted})
		}
		l.Count += l.Granted
	}
	l.Buckets = slices.Clone(bs)
	b, err := json.Marshal(bs)
	return b, l, err
}

// giveBack subtracts r from the bucket it was recorded in (if it is still
// there), never below zero.
func giveBack(bs []Bucket, r Bucket) []Bucket {
	if r.Count <= 0 {
		return bs
	}
	for i := range bs {
		if bs[i].End == r.End {
			bs[i].Count = max(0, bs[i].Count-r.Count)
		}
	}
	return bs
}

// SetLeaser makes the counter admit rate-limited calls only against leases
// taken through l (nil: count in memory, write-behind).
func (c *Counter) SetLeaser(l Leaser) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leaser = l
}

// leaseNeed is a window whose lease must be renewed before a check.
type leaseNeed struct {
	key string
	w   *window
	req LeaseRequest
}

// leasesNeeded lists the windows counting call whose lease is used up or
// expired (to be taken by the caller), and the leases other checks are
// taking (to be waited for). Callers hold c.mu.
func (c *Counter) leasesNeeded(call *Call, now int64) (out []leaseNeed, wait []chan struct{}) {
	s := c.set
	var renew []int // limits whose lease is past half its time
	for i := range s.Limits {
		if !s.matches(i, call) {
			continue
		}
		l := &s.Limits[i]
		if l.Effect == EffectNewHost && !c.newHost(call) {
			continue
		}
		w := c.windowOf(i, call.Agent)
		if w.leasing {
			wait = append(wait, w.leaseDone)
			continue
		}
		if now <= w.leaseUntil && (w.lease > 0 || !w.storeRoom) {
			// A lease to use, or the store's answer that the window is
			// full, still valid (a full window is asked again when that
			// answer expires: stricter, never looser).
			if w.lease == 0 || now+int64(LeaseTTL)/2 < w.leaseUntil {
				continue
			}
			// Past half its time: renewed with the others this check
			// takes, if any (see renewals below).
			renew = append(renew, i)
			continue
		}
		out = append(out, c.startLease(l, call.Agent, w, now))
	}
	if len(out) > 0 {
		// The round trip is made anyway: the leases past half their time
		// are renewed in it, so that a call's windows expire together.
		for _, i := range renew {
			out = append(out, c.startLease(&s.Limits[i], call.Agent, c.windowOf(i, call.Agent), now))
		}
	}
	return out, wait
}

// startLease marks w as leasing and returns its request, giving back what
// is left of its lease. Callers hold c.mu.
func (c *Counter) startLease(l *RateLimit, agent string, w *window, now int64) leaseNeed {
	// Ask for about twice what the last lease covered.
	want := 1
	if w.leaseUsed > 0 {
		want = min(maxLease, 2*w.leaseUsed)
	}
	if used := w.leaseGranted - w.lease; used > 0 {
		want = min(maxLease, max(want, 2*used))
	}
	req := LeaseRequest{Want: want, Max: l.MaxCalls, Window: l.Window(), Until: now + int64(LeaseTTL)}
	if w.lease > 0 {
		req.Return = Bucket{End: w.leaseEnd, Count: w.lease}
	}
	w.leasing, w.leaseDone = true, make(chan struct{})
	return leaseNeed{key: WindowKey(l.ID, agent), w: w, req: req}
}

// applyLease takes a lease the store granted (or, with err, ends the
// attempt). Callers hold c.mu.
func (c *Counter) applyLease(n *leaseNeed, l Lease, err error) {
	w := n.w
	w.leasing = false
	close(w.leaseDone)
	if err != nil {
		return
	}
	w.leaseUsed = w.leaseGranted - n.req.Return.Count
	w.base, w.baseIdx, w.baseSum = l.Buckets, 0, 0
	for _, b := range w.base {
		w.baseSum += b.Count
	}
	w.returning = 0
	w.lease, w.leaseGranted = l.Granted, l.Granted
	w.leaseUntil = n.req.Until
	w.leaseEnd = (n.req.Until/bucketSize(n.req.Window) + 1) * bucketSize(n.req.Window)
	w.storeCount = l.Count
	w.storeRoom = l.Count < n.req.Max
}

// CheckContext is Check for a counter that may take leases through the
// store (SetLeaser): a counted call whose windows' leases are used up
// waits for new ones. An error of the store is returned (the caller puts
// the call to a person); nothing is counted then.
func (c *Counter) CheckContext(ctx context.Context, call *Call, count bool) ([]Finding, error) {
	now := call.Now.UnixNano()
	tries := 0
	for {
		c.mu.Lock()
		if c.leaser == nil || !count {
			out, _ := c.checkLocked(call, count)
			c.mu.Unlock()
			return out, nil
		}
		leaser := c.leaser
		need, wait := c.leasesNeeded(call, now)
		if len(need) == 0 && len(wait) > 0 {
			c.mu.Unlock()
			for _, ch := range wait {
				select {
				case <-ch:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			// Leases the store grants other checks; this check may take
			// from them, or ask for its own.
			continue
		}
		if len(need) == 0 {
			out, short := c.checkLocked(call, count)
			if !short || tries >= maxAttempts {
				c.mu.Unlock()
				return out, nil
			}
			// A lease this check counted on was used by concurrent
			// checks while the store still had room: take another.
			tries++
			c.mu.Unlock()
			continue
		}
		c.mu.Unlock()
		for _, ch := range wait {
			select {
			case <-ch:
			case <-ctx.Done():
				err := ctx.Err()
				c.mu.Lock()
				for i := range need {
					c.applyLease(&need[i], Lease{}, err)
				}
				c.mu.Unlock()
				return nil, err
			}
		}
		reqs := make([]KeyedLease, len(need))
		for i := range need {
			reqs[i] = KeyedLease{Key: need[i].key, LeaseRequest: need[i].req}
		}
		got, err := leaser(ctx, reqs)
		if err == nil && len(got) != len(need) {
			err = errors.New("usage: the store granted a different number of leases than asked")
		}
		c.mu.Lock()
		for i := range need {
			var l Lease
			if err == nil {
				l = got[i]
			}
			c.applyLease(&need[i], l, err)
		}
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
}

// estimate is a window's count now: the store's buckets as last read
// (every process's counts and leases) and this process's fresh counts,
// less the part of its own lease not used (the calls it may still admit).
func (w *window) estimate(t int64) int {
	return max(0, w.since(t)-w.lease-w.returning)
}
