package usage

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// BenchmarkCheck is one counted check against 50 rate limits and 10
// budget caps that the call does not reach.
func BenchmarkCheck(b *testing.B) { benchCheck(b, false) }

// BenchmarkCheckLeased is BenchmarkCheck for a counter that counts through
// leases (several processes on one database), with the store's work done
// in memory (LeaseWindow under a mutex): what leasing adds in CPU, without
// the database's round trips. trips/op is how many round trips to the
// store a call makes (one per check that needs leases, however many).
func BenchmarkCheckLeased(b *testing.B) { benchCheck(b, true) }

func benchCheck(b *testing.B, leased bool) {
	var limits []RateLimit
	for i := range 50 {
		l := RateLimit{ID: fmt.Sprintf("rl_%02d", i), MaxCalls: MaxCalls, WindowSeconds: 3600, Action: Pause, Enabled: true}
		switch i % 5 {
		case 1:
			l.Agent = "bench"
		case 2:
			l.Tool, l.Agent = "mcp__*", "other"
		case 3:
			l.Effect = []string{EffectWrite, EffectDelete, EffectExec, EffectSend, EffectNewHost}[i%5]
		case 4:
			l.Risk = "confirm"
		}
		limits = append(limits, l)
	}
	var caps []BudgetCap
	for i := range 10 {
		c := BudgetCap{ID: fmt.Sprintf("bc_%02d", i), MaxCostUSD: 1e6, Action: Stop, Enabled: true, Scope: ScopeGlobal,
			Period: []string{Daily, Weekly, Monthly}[i%3]}
		if i%2 == 1 {
			c.Scope = ScopeAgent
		}
		caps = append(caps, c)
	}
	s, err := Compile(limits, caps, DefaultPrices)
	if err != nil {
		b.Fatal(err)
	}
	c := NewCounter(s)
	var (
		mu     sync.Mutex
		stored = map[string][]byte{}
		leases int
	)
	if leased {
		c.SetLeaser(func(_ context.Context, reqs []KeyedLease) ([]Lease, error) {
			mu.Lock()
			defer mu.Unlock()
			leases++
			var out []Lease
			for _, r := range reqs {
				b, l, err := LeaseWindow(stored[r.Key], r.LeaseRequest, time.Unix(0, r.Until-int64(LeaseTTL)))
				if err != nil {
					return nil, err
				}
				stored[r.Key] = b
				out = append(out, l)
			}
			return out, nil
		})
	}
	start := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		call := Call{Agent: "bench", Session: "s1", Tool: "Read", Level: action.Auto, Now: start.Add(time.Duration(i) * 50 * time.Millisecond)}
		if f := c.Check(&call, true); len(f) != 0 {
			b.Fatal(f)
		}
	}
	if leased {
		b.ReportMetric(float64(leases)/float64(b.N), "trips/op")
	}
}

// BenchmarkCostBetween is one cost_threshold trigger's read of the spend:
// an agent with a day of spend stored to the minute and a few fresh costs,
// summed over a 24-hour window.
func BenchmarkCostBetween(b *testing.B) {
	now := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	var fresh []CostSample
	for i := range 24 * 60 {
		fresh = append(fresh, CostSample{T: now.Add(-time.Duration(i) * time.Minute).UnixNano(), USD: 0.01})
	}
	_, bs, err := MergeCosts(nil, fresh, now)
	if err != nil {
		b.Fatal(err)
	}
	c := NewCounter(nil)
	c.PutCosts("a", bs)
	for i := range 5 {
		c.Record("a", "s", Spend{Cost: 0.01}, now.Add(-time.Duration(i)*time.Second))
	}
	from := now.Add(-24 * time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		if c.CostBetween("a", from, now) < 14 {
			b.Fatal("the day's spend is not summed")
		}
	}
}
