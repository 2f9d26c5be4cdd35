package usage

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Persistence is write-behind: checks and records change only memory; the
// kernel takes what changed (TakeDirty) every second or so and merges it
// into the store in one transaction per namespace (MergeBuckets,
// MergeSpend), then puts the merged windows back (PutWindow), so that
// counts made by other processes on the same database are seen within a
// flush. A window is stored as at most BucketsPerWindow buckets of counts,
// not as one time per call: a flush costs the same whatever the load.

// Dirty is what a counter changed since the last TakeDirty.
type Dirty struct {
	// Windows are the times counted per WindowKey, with the limit's window.
	Windows map[string]DirtyWindow
	// Spend is the spend added per SpendKey.
	Spend map[string]Spend
	// Hosts are every host remembered per agent, when any changed.
	Hosts map[string][]string
	// Costs are the costs recorded per agent (recent.go).
	Costs map[string][]CostSample
}

// DirtyWindow is a window's fresh times, and the unused part of a lease
// to give back (Return.Count > 0; see lease.go).
type DirtyWindow struct {
	Fresh  []int64
	Window time.Duration
	Return Bucket
}

// Empty reports whether d holds nothing.
func (d *Dirty) Empty() bool {
	return len(d.Windows) == 0 && len(d.Spend) == 0 && len(d.Hosts) == 0 && len(d.Costs) == 0
}

// WindowKey names a rate limit's counter of an agent in the store.
func WindowKey(limit, agent string) string { return limit + "|" + agent }

// TakeDirty returns what changed since the last call. The windows' fresh
// times stay counted until PutWindow replaces them by the merged buckets
// (or Restore gives them back to the next flush).
func (c *Counter) TakeDirty() Dirty { return c.TakeDirtyAt(time.Now(), false) }

// TakeDirtyAt is TakeDirty at now, on the clock of the calls: the unused
// parts of the leases expired by now (every lease, when final: the
// process stops) are given back too.
func (c *Counter) TakeDirtyAt(now time.Time, final bool) Dirty {
	t := now.UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	d := Dirty{Windows: map[string]DirtyWindow{}, Spend: c.pending}
	c.pending = map[string]Spend{}
	byID := map[string]*RateLimit{}
	for i := range c.set.Limits {
		byID[c.set.Limits[i].ID] = &c.set.Limits[i]
	}
	for k, w := range c.windows {
		var ret Bucket
		if w.lease > 0 && !w.leasing && (final || t > w.leaseUntil) {
			ret = Bucket{End: w.leaseEnd, Count: w.lease}
		}
		if len(w.fresh) == 0 && ret.Count == 0 {
			continue
		}
		if l := byID[k.limit]; l != nil {
			d.Windows[WindowKey(k.limit, k.agent)] = DirtyWindow{Fresh: slices.Clone(w.fresh), Window: l.Window(), Return: ret}
			w.flushing = len(w.fresh)
			if ret.Count > 0 {
				w.returning, w.lease, w.leaseGranted = ret.Count, 0, w.leaseGranted-ret.Count
			}
		} else {
			w.fresh = nil // the limit is gone
			w.lease = 0   // and its window: nothing to give back
		}
	}
	for agent, w := range c.costs {
		if len(w.fresh) > 0 {
			if d.Costs == nil {
				d.Costs = map[string][]CostSample{}
			}
			d.Costs[agent] = slices.Clone(w.fresh)
			w.flushing = len(w.fresh)
		} else if len(w.base) == 0 {
			delete(c.costs, agent)
		}
	}
	if c.dirtyH {
		d.Hosts = map[string][]string{}
		for a, hs := range c.hosts {
			list := make([]string, 0, len(hs))
			for h := range hs {
				list = append(list, h)
			}
			slices.Sort(list)
			d.Hosts[a] = list
		}
		c.dirtyH = false
	}
	return d
}

// Restore gives back what a failed flush took, to be flushed next time.
func (c *Counter) Restore(d Dirty) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, sp := range d.Spend {
		c.pending[k] = c.pending[k].add(sp)
	}
	for k := range d.Windows {
		limit, agent, ok := strings.Cut(k, "|")
		if !ok {
			continue
		}
		if w := c.windows[wkey{limit, agent}]; w != nil {
			// A lease not given back stays counted in the store until it
			// slides out of the window (stricter, never looser).
			w.flushing, w.returning = 0, 0
		}
	}
	if d.Hosts != nil {
		c.dirtyH = true
	}
	for agent := range d.Costs {
		if w := c.costs[agent]; w != nil {
			w.flushing = 0
		}
	}
}

// BucketsPerWindow is how many buckets a stored window has at most.
const BucketsPerWindow = 64

// Bucket is the count of calls of a stored window whose times fall before
// End (unix nanoseconds) and after the previous bucket's.
type Bucket struct {
	End   int64 `json:"e"`
	Count int   `json:"n"`
}

// bucketSize is the width of a window's buckets: a 64th of it, at least a
// second.
func bucketSize(window time.Duration) int64 {
	return max(int64(time.Second), int64(window)/BucketsPerWindow)
}

// MergeWindow is MergeBuckets for a dirty window: its unused lease is
// given back first.
func MergeWindow(stored []byte, dw DirtyWindow, now time.Time) ([]byte, []Bucket, error) {
	if dw.Return.Count > 0 && stored != nil {
		var bs []Bucket
		if err := json.Unmarshal(stored, &bs); err != nil {
			return nil, nil, err
		}
		b, err := json.Marshal(giveBack(bs, dw.Return))
		if err != nil {
			return nil, nil, err
		}
		stored = b
	}
	return MergeBuckets(stored, dw.Fresh, dw.Window, now)
}

// MergeBuckets adds fresh times to a stored window (JSON buckets, or nil)
// and drops the buckets out of the window at now.
func MergeBuckets(stored []byte, fresh []int64, window time.Duration, now time.Time) ([]byte, []Bucket, error) {
	var bs []Bucket
	if stored != nil {
		if err := json.Unmarshal(stored, &bs); err != nil {
			return nil, nil, err
		}
	}
	size := bucketSize(window)
	m := map[int64]int{}
	for _, b := range bs {
		if b.Count > 0 {
			m[b.End] += b.Count
		}
	}
	for _, t := range fresh {
		m[(t/size+1)*size]++
	}
	from := now.UnixNano() - int64(window)
	out := make([]Bucket, 0, len(m))
	for end, n := range m {
		if end > from {
			out = append(out, Bucket{End: end, Count: n})
		}
	}
	slices.SortFunc(out, func(a, b Bucket) int { return cmpInt64(a.End, b.End) })
	b, err := json.Marshal(out)
	return b, out, err
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// PutWindow replaces a window's base by the merged buckets and forgets the
// fresh times the flush took (they are in the buckets now).
func (c *Counter) PutWindow(key string, buckets []Bucket) {
	limit, agent, ok := strings.Cut(key, "|")
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.windows[wkey{limit, agent}]
	if w == nil {
		w = &window{}
		c.windows[wkey{limit, agent}] = w
		delete(c.agents, agent) // its cache may hold no window for this limit
	}
	w.base, w.baseIdx, w.baseSum = slices.Clone(buckets), 0, 0
	for _, b := range w.base {
		w.baseSum += b.Count
	}
	w.fresh = append(w.fresh[:0], w.fresh[min(w.flushing, len(w.fresh)):]...)
	w.flushing, w.returning = 0, 0
}

// MergeSpend adds delta to a stored row (JSON, or nil).
func MergeSpend(stored []byte, delta Spend) ([]byte, error) {
	var sp Spend
	if stored != nil {
		if err := json.Unmarshal(stored, &sp); err != nil {
			return nil, err
		}
	}
	return json.Marshal(sp.add(delta))
}

// LoadRows replaces the spend rows with the stored ones (plus what is not
// persisted yet) and computes the caps' totals again.
func (c *Counter) LoadRows(stored map[string]Spend) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows := make(map[string]Spend, len(stored)+len(c.pending))
	for k, v := range stored {
		rows[k] = v
	}
	for k, v := range c.pending {
		rows[k] = rows[k].add(v)
	}
	c.rows = rows
	clear(c.totals)
	clear(c.started)
}

// LoadHosts sets the hosts remembered per agent (from the store), keeping
// those remembered here.
func (c *Counter) LoadHosts(stored map[string][]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for a, hs := range stored {
		seen := c.hosts[a]
		if seen == nil {
			seen = map[string]bool{}
			c.hosts[a] = seen
		}
		for _, h := range hs {
			if len(seen) < maxHosts {
				seen[h] = true
			}
		}
	}
}
