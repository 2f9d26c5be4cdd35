package autorule

import (
	"sort"
	"sync"
	"time"
)

// Sample is one recorded call or result the triggers count. (Costs are
// not here: cost triggers read the budget store, see Spend.)
type Sample struct {
	Seq   int64
	At    time.Time
	Agent string
	Tool  string
	Kind  string
	// What the sample is.
	Call   bool // an action was submitted
	Result bool // a result was recorded; Failed when it was an error
	Failed bool //
}

// Counters are the sliding windows the triggers read: per agent, the
// recent calls and results, kept for Keep. They are fed from the
// audit trail (by the kernel, which reads every process's records) and
// read under a read lock on the hot path. Safe for concurrent use.
type Counters struct {
	mu     sync.RWMutex
	keep   time.Duration
	agents map[string]*agentWindow
	seq    int64 // the last audit sequence number fed
}

// agentWindow is one agent's samples. Calls and results are indexed by
// their tool name and by their kind (a sample whose tool is named as its
// kind once), and "" holds them all, each list in time order: a count
// over a rule's exact tool or kind is two binary searches. Raw lists keep
// the samples for glob patterns.
type agentWindow struct {
	calls, results, failed map[string][]time.Time
	rawCalls, rawResults   []Sample
}

func (w *agentWindow) index(m map[string][]time.Time, s Sample) {
	m[""] = append(m[""], s.At)
	if s.Tool != "" {
		m[s.Tool] = append(m[s.Tool], s.At)
	}
	if s.Kind != "" && s.Kind != s.Tool {
		m[s.Kind] = append(m[s.Kind], s.At)
	}
}

// NewCounters keeps samples for keep (at least a minute).
func NewCounters(keep time.Duration) *Counters {
	return &Counters{keep: max(keep, time.Minute), agents: map[string]*agentWindow{}}
}

// Keep returns how long samples are kept.
func (c *Counters) Keep() time.Duration {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.keep
}

// SetKeep changes how long samples are kept (growing it does not bring
// back what was dropped: the caller feeds the trail again).
func (c *Counters) SetKeep(d time.Duration) {
	c.mu.Lock()
	c.keep = max(d, time.Minute)
	c.mu.Unlock()
}

// Seq is the sequence number of the last audit record fed.
func (c *Counters) Seq() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.seq
}

// Add feeds samples (in time order) and prunes what is older than Keep
// before now. Samples with a Seq at or below the last one fed are
// ignored, so feeding the same records twice counts them once.
func (c *Counters) Add(now time.Time, samples ...Sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range samples {
		if s.Seq != 0 {
			if s.Seq <= c.seq {
				continue
			}
			c.seq = s.Seq
		}
		w := c.agents[s.Agent]
		if w == nil {
			w = &agentWindow{calls: map[string][]time.Time{}, results: map[string][]time.Time{}, failed: map[string][]time.Time{}}
			c.agents[s.Agent] = w
		}
		switch {
		case s.Call:
			w.rawCalls = append(w.rawCalls, s)
			w.index(w.calls, s)
		case s.Result:
			w.rawResults = append(w.rawResults, s)
			w.index(w.results, s)
			if s.Failed {
				w.index(w.failed, s)
			}
		}
	}
	cut := now.Add(-c.keep)
	for a, w := range c.agents {
		w.rawCalls, w.rawResults = prune(w.rawCalls, cut), prune(w.rawResults, cut)
		for _, m := range []map[string][]time.Time{w.calls, w.results, w.failed} {
			for k, ts := range m {
				if ts = pruneTimes(ts, cut); len(ts) == 0 {
					delete(m, k)
				} else {
					m[k] = ts
				}
			}
		}
		if len(w.rawCalls)+len(w.rawResults) == 0 {
			delete(c.agents, a)
		}
	}
}

func pruneTimes(ts []time.Time, cut time.Time) []time.Time {
	i := countBefore(ts, cut)
	if i == 0 {
		return ts
	}
	return append(ts[:0:0], ts[i:]...)
}

// countBefore is the number of times in ts (in order) before t.
func countBefore(ts []time.Time, t time.Time) int {
	return sort.Search(len(ts), func(i int) bool { return !ts[i].Before(t) })
}

// since counts the times in ts at or after t.
func since(ts []time.Time, t time.Time) int { return len(ts) - countBefore(ts, t) }

// SetSeq records that the trail was read up to seq (with nothing to feed).
func (c *Counters) SetSeq(seq int64) {
	c.mu.Lock()
	c.seq = max(c.seq, seq)
	c.mu.Unlock()
}

func prune(s []Sample, cut time.Time) []Sample {
	i := 0
	for i < len(s) && s[i].At.Before(cut) {
		i++
	}
	if i == 0 {
		return s
	}
	return append(s[:0:0], s[i:]...)
}

// Calls counts the agent's calls since from whose tool or kind m matches.
func (c *Counters) Calls(agent string, from time.Time, m matcher) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w := c.agents[agent]
	if w == nil {
		return 0
	}
	if !m.glob {
		return since(w.calls[m.pat], from)
	}
	n := 0
	for i := len(w.rawCalls) - 1; i >= 0 && !w.rawCalls[i].At.Before(from); i-- {
		if m.call(w.rawCalls[i].Tool, w.rawCalls[i].Kind) {
			n++
		}
	}
	return n
}

// Results counts the agent's results since from whose tool or kind m
// matches, and the failed ones among them.
func (c *Counters) Results(agent string, from time.Time, m matcher) (total, failed int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w := c.agents[agent]
	if w == nil {
		return 0, 0
	}
	if !m.glob {
		return since(w.results[m.pat], from), since(w.failed[m.pat], from)
	}
	for i := len(w.rawResults) - 1; i >= 0 && !w.rawResults[i].At.Before(from); i-- {
		if s := &w.rawResults[i]; m.call(s.Tool, s.Kind) {
			total++
			if s.Failed {
				failed++
			}
		}
	}
	return total, failed
}
