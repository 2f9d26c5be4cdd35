package usage

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Persistence is write-behind: checks and records change only memory; the
// kernel takes what changed (TakeDirty) every second or so and merges it
// into the store in one transaction per namespace (Merge*), then puts the
// merged state back (PutWindow), so that counts made by other processes on
// the same database are seen within a flush.

// Dirty is what a counter changed since the last TakeDirty.
type Dirty struct {
	// Windows are the times counted per WindowKey, with the limit's window
	// and maximum (to trim the stored list).
	Windows map[string]DirtyWindow
	// Spend is the spend added per SpendKey.
	Spend map[string]Spend
	// Hosts are every host remembered per agent, when any changed.
	Hosts map[string][]string
}

// DirtyWindow is a window's fresh times.
type DirtyWindow struct {
	Fresh  []int64
	Window time.Duration
	Max    int
}

// Empty reports whether d holds nothing.
func (d *Dirty) Empty() bool { return len(d.Windows) == 0 && len(d.Spend) == 0 && len(d.Hosts) == 0 }

// WindowKey names a rate limit's counter of an agent in the store.
func WindowKey(limit, agent string) string { return limit + "|" + agent }

// TakeDirty returns and forgets what changed since the last call.
func (c *Counter) TakeDirty() Dirty {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := Dirty{Windows: map[string]DirtyWindow{}, Spend: c.pending}
	c.pending = map[string]Spend{}
	byID := map[string]*RateLimit{}
	for i := range c.set.Limits {
		byID[c.set.Limits[i].ID] = &c.set.Limits[i]
	}
	for k, w := range c.windows {
		if len(w.fresh) == 0 {
			continue
		}
		if l := byID[k.limit]; l != nil {
			d.Windows[WindowKey(k.limit, k.agent)] = DirtyWindow{Fresh: w.fresh, Window: l.Window(), Max: l.MaxCalls}
		}
		w.fresh = nil
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
	for k, dw := range d.Windows {
		limit, agent, ok := strings.Cut(k, "|")
		if !ok {
			continue
		}
		if w := c.windows[wkey{limit, agent}]; w != nil {
			w.fresh = append(slices.Clone(dw.Fresh), w.fresh...)
		}
	}
	if d.Hosts != nil {
		c.dirtyH = true
	}
}

// MergeTimes merges a stored window (JSON list of unix nanoseconds, or
// nil) with fresh times: ascending, without times at or before now-window,
// at most max of them.
func MergeTimes(stored []byte, fresh []int64, window time.Duration, max int, now time.Time) ([]byte, []int64, error) {
	var times []int64
	if stored != nil {
		if err := json.Unmarshal(stored, &times); err != nil {
			return nil, nil, err
		}
	}
	times = append(times, fresh...)
	slices.Sort(times)
	from := now.UnixNano() - int64(window)
	i := 0
	for i < len(times) && times[i] <= from {
		i++
	}
	times = times[i:]
	if len(times) > max {
		times = times[len(times)-max:]
	}
	b, err := json.Marshal(times)
	return b, times, err
}

// PutWindow replaces a window's times with the merged ones (keeping times
// counted since the flush took them).
func (c *Counter) PutWindow(key string, times []int64) {
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
	}
	merged := append(slices.Clone(times), w.fresh...)
	slices.Sort(merged)
	w.times = merged
	w.trim(maxKeep, 0)
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
