package usage

import (
	"encoding/json"
	"slices"
	"time"
)

// Recent spend: what each agent's model calls cost, by time, for the
// cost_threshold auto-rules (a sliding window of minutes, where the caps
// count by day). Like the rate windows it is kept in memory as the store's
// buckets as last read (every process's spend) plus what this process
// recorded since (fresh), written behind and read back, so that a rule in
// the daemon sees what an `overseer run` task or a hooked agent's report
// cost in another process.
//
// A stored bucket is a minute of spend while it is less than RecentFine
// old, then an hour; buckets older than RecentKeep are dropped. A window
// counts a bucket that overlaps it whole: the sum is at most a bucket's
// width early (stricter, never looser).

const (
	// RecentKeep is how long the recent spend is kept: the longest window
	// an auto-rule may count over.
	RecentKeep = 31 * 24 * time.Hour
	// RecentFine is how long the spend is kept to the minute.
	RecentFine = 24 * time.Hour
)

// CostBucket is an agent's spend in the slot of Size nanoseconds ending at
// End (unix nanoseconds).
type CostBucket struct {
	End  int64   `json:"e"`
	Size int64   `json:"s"`
	USD  float64 `json:"c"`
}

// CostSample is one recorded cost at T (unix nanoseconds).
type CostSample struct {
	T   int64   `json:"t"`
	USD float64 `json:"c"`
}

// costWindow is one agent's recent spend.
type costWindow struct {
	base     []CostBucket // by End
	ends     []int64      // base's ends, for the binary searches
	prefix   []float64    // prefix[i]: the spend of base[:i]
	fresh    []CostSample // by T
	flushing int          // how many of fresh a flush under way took
}

// setBase replaces the stored buckets (sorting them by End) and their
// prefix sums.
func (w *costWindow) setBase(bs []CostBucket) {
	w.base = slices.Clone(bs)
	slices.SortStableFunc(w.base, func(a, b CostBucket) int { return cmpInt64(a.End, b.End) })
	w.prefix = make([]float64, len(w.base)+1)
	w.ends = make([]int64, len(w.base))
	for i, b := range w.base {
		w.prefix[i+1] = w.prefix[i] + b.USD
		w.ends[i] = b.End
	}
}

func (c *Counter) costWindowOf(agent string) *costWindow {
	w := c.costs[agent]
	if w == nil {
		w = &costWindow{}
		c.costs[agent] = w
	}
	return w
}

// addCostLocked records usd spent by agent at t.
func (c *Counter) addCostLocked(agent string, usd float64, t time.Time) {
	if !(usd > 0) {
		return
	}
	w := c.costWindowOf(agent)
	n := t.UnixNano()
	if k := len(w.fresh); k > 0 && n < w.fresh[k-1].T {
		n = w.fresh[k-1].T
	}
	w.fresh = append(w.fresh, CostSample{T: n, USD: usd})
}

// CostBetween sums what agent's model calls cost after from and up to to,
// as every process on the store recorded it (as of the last read) and this
// one since. A stored bucket that overlaps the span counts whole.
func (c *Counter) CostBetween(agent string, from, to time.Time) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.costs[agent]
	if w == nil {
		return 0
	}
	f, t := from.UnixNano(), to.UnixNano()
	var sum float64
	// The buckets ending after from and by to all start before to: a
	// difference of prefix sums. Those ending after to count when they
	// start before it (a minute bucket cannot, an hour one may).
	i, _ := slices.BinarySearch(w.ends, f+1)
	j, _ := slices.BinarySearch(w.ends, t+1)
	if j > i {
		sum += w.prefix[j] - w.prefix[i]
	}
	for k := max(i, j); k < len(w.base) && w.base[k].End-int64(time.Hour) < t; k++ {
		if b := &w.base[k]; b.End-b.Size < t {
			sum += b.USD
		}
	}
	for j := len(w.fresh) - 1; j >= 0 && w.fresh[j].T > f; j-- {
		if w.fresh[j].T <= t {
			sum += w.fresh[j].USD
		}
	}
	return sum
}

// MergeCosts adds fresh costs to an agent's stored buckets (JSON, or nil):
// to the minute while less than RecentFine old at now, to the hour until
// RecentKeep, dropped after.
func MergeCosts(stored []byte, fresh []CostSample, now time.Time) ([]byte, []CostBucket, error) {
	var bs []CostBucket
	if stored != nil {
		if err := json.Unmarshal(stored, &bs); err != nil {
			return nil, nil, err
		}
	}
	n := now.UnixNano()
	fine, drop := n-int64(RecentFine), n-int64(RecentKeep)
	type slot struct{ end, size int64 }
	m := map[slot]float64{}
	put := func(t, size int64, usd float64) {
		if !(usd > 0) || usd > 1e12 {
			return
		}
		if t <= fine {
			size = max(size, int64(time.Hour))
		}
		m[slot{(t/size + 1) * size, size}] += usd
	}
	for _, b := range bs {
		if b.Size <= 0 || b.Size > int64(time.Hour) {
			continue
		}
		// A bucket's spend sits at its start: never later than it was.
		put(b.End-b.Size, b.Size, b.USD)
	}
	for _, s := range fresh {
		put(s.T, int64(time.Minute), s.USD)
	}
	out := make([]CostBucket, 0, len(m))
	for s, usd := range m {
		if s.end > drop {
			out = append(out, CostBucket{End: s.end, Size: s.size, USD: usd})
		}
	}
	slices.SortFunc(out, func(a, b CostBucket) int {
		if c := cmpInt64(a.End, b.End); c != 0 {
			return c
		}
		return cmpInt64(a.Size, b.Size)
	})
	b, err := json.Marshal(out)
	return b, out, err
}

// PutCosts replaces agent's stored buckets by the merged ones and forgets
// the fresh costs the flush took (they are in the buckets now).
func (c *Counter) PutCosts(agent string, buckets []CostBucket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.costWindowOf(agent)
	w.setBase(buckets)
	w.fresh = append(w.fresh[:0], w.fresh[min(w.flushing, len(w.fresh)):]...)
	w.flushing = 0
}

// LoadCosts replaces the stored buckets of the agents in stored (read
// again from the store), keeping the fresh costs not yet written.
func (c *Counter) LoadCosts(stored map[string][]CostBucket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for agent, bs := range stored {
		c.costWindowOf(agent).setBase(bs)
	}
}
