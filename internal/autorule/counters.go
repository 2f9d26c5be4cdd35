package autorule

import (
	"sync"
	"time"
)

// Sample is one recorded call, result or cost the triggers count.
type Sample struct {
	Seq   int64
	At    time.Time
	Agent string
	Tool  string
	Kind  string
	// What the sample is.
	Call   bool    // an action was submitted
	Result bool    // a result was recorded; Failed when it was an error
	Failed bool    //
	Cost   float64 // USD a model call cost
}

// Counters are the sliding windows the triggers read: per agent, the
// recent calls, results and costs, kept for Keep. They are fed from the
// audit trail (by the kernel, which reads every process's records) and
// read under a read lock on the hot path. Safe for concurrent use.
type Counters struct {
	mu     sync.RWMutex
	keep   time.Duration
	agents map[string]*agentWindow
	seq    int64 // the last audit sequence number fed
}

type agentWindow struct {
	calls   []Sample
	results []Sample
	costs   []Sample
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
			w = &agentWindow{}
			c.agents[s.Agent] = w
		}
		switch {
		case s.Call:
			w.calls = append(w.calls, s)
		case s.Result:
			w.results = append(w.results, s)
		case s.Cost > 0:
			w.costs = append(w.costs, s)
		}
	}
	cut := now.Add(-c.keep)
	for a, w := range c.agents {
		w.calls, w.results, w.costs = prune(w.calls, cut), prune(w.results, cut), prune(w.costs, cut)
		if len(w.calls)+len(w.results)+len(w.costs) == 0 {
			delete(c.agents, a)
		}
	}
}

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

// matchFn says whether a sample's tool or kind is counted.
type matchFn func(tool, kind string) bool

// Calls counts the agent's calls since since that match.
func (c *Counters) Calls(agent string, since time.Time, m matchFn) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w := c.agents[agent]
	if w == nil {
		return 0
	}
	n := 0
	for i := len(w.calls) - 1; i >= 0; i-- {
		s := &w.calls[i]
		if s.At.Before(since) {
			break
		}
		if m == nil || m(s.Tool, s.Kind) {
			n++
		}
	}
	return n
}

// Results counts the agent's results since since that match, and the
// failed ones among them.
func (c *Counters) Results(agent string, since time.Time, m matchFn) (total, failed int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w := c.agents[agent]
	if w == nil {
		return 0, 0
	}
	for i := len(w.results) - 1; i >= 0; i-- {
		s := &w.results[i]
		if s.At.Before(since) {
			break
		}
		if m == nil || m(s.Tool, s.Kind) {
			total++
			if s.Failed {
				failed++
			}
		}
	}
	return total, failed
}

// Cost sums what the agent's model calls cost since since.
func (c *Counters) Cost(agent string, since time.Time) float64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w := c.agents[agent]
	if w == nil {
		return 0
	}
	var sum float64
	for i := len(w.costs) - 1; i >= 0; i-- {
		if w.costs[i].At.Before(since) {
			break
		}
		sum += w.costs[i].Cost
	}
	return sum
}
