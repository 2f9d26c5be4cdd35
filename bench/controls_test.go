package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/perception"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
	"github.com/overseer-dev/overseer/internal/usage"
)

// controlSignals are the perception signals with the hybrid controls, as
// the kernel wires them for a submitted call: every check counts.
type controlSignals struct {
	*perception.Bus
	c   *usage.Counter
	clk clock.Clock
}

func (s *controlSignals) Usage(_ context.Context, a *action.Action, level action.Level, eff usage.Call) ([]usage.Finding, error) {
	eff.Agent, eff.Session, eff.Tool, eff.Level, eff.Now = a.Agent, a.Session, a.Tool, level, s.clk.Now()
	return s.c.Check(&eff, true), nil
}

// benchControls are 50 rate limits and 10 budget caps of every shape,
// none of which the benchmark's calls reach (the common case: counting
// and comparing, no finding).
func benchControls(tb testing.TB) *usage.Set {
	var limits []usage.RateLimit
	for i := range 50 {
		l := usage.RateLimit{ID: fmt.Sprintf("rl_%02d", i), MaxCalls: usage.MaxCalls, WindowSeconds: 3600, Action: usage.Pause, Enabled: true}
		switch i % 5 {
		case 0: // every agent, every tool
		case 1:
			l.Agent = "bench"
		case 2:
			l.Tool, l.Agent = "mcp__*", "other"
		case 3:
			l.Effect = []string{usage.EffectWrite, usage.EffectDelete, usage.EffectExec, usage.EffectSend, usage.EffectNewHost}[i%5]
		case 4:
			l.Risk = "confirm"
		}
		limits = append(limits, l)
	}
	var caps []usage.BudgetCap
	for i := range 10 {
		c := usage.BudgetCap{ID: fmt.Sprintf("bc_%02d", i), MaxCostUSD: 1e6, Action: usage.Stop, Enabled: true,
			Scope: usage.ScopeGlobal, Period: []string{usage.Daily, usage.Weekly, usage.Monthly}[i%3]}
		if i%2 == 1 {
			c.Scope = usage.ScopeAgent
		}
		caps = append(caps, c)
	}
	s, err := usage.Compile(limits, caps, usage.DefaultPrices)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// BenchmarkEvaluateControls measures Evaluate of the 100-rule policy's
// bench case with the perception signals, without and with 50 rate limits
// and 10 budget caps (each call checked and counted). Goal: the controls
// add at most 10 µs to the median.
func BenchmarkEvaluateControls(b *testing.B) {
	rs, p := loadPolicy(b)
	c, ok := rs.Case(rs.Bench)
	if !ok {
		b.Fatalf("no bench case %q", rs.Bench)
	}
	tmpl := caseAction(b, c)
	tmpl.Agent, tmpl.Session = "bench", "s1"
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "perception.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	clk := clock.Real{}
	bus := perception.New(st, clk)
	b.Run("without", func(b *testing.B) {
		eng, err := firewall.New(ctx, firewall.Config{Policy: p, Signals: bus})
		if err != nil {
			b.Fatal(err)
		}
		benchEvaluateCPU(b, eng, tmpl, nil)
	})
	b.Run("with-50-limits-10-caps", func(b *testing.B) {
		set := benchControls(b)
		sig := &controlSignals{Bus: bus, c: usage.NewCounter(set), clk: clk}
		eng, err := firewall.New(ctx, firewall.Config{Policy: p, Signals: sig})
		if err != nil {
			b.Fatal(err)
		}
		// A fast machine makes more calls in a run than a limit may allow
		// (usage.MaxCalls within its hour): the counts start afresh, between
		// timed calls, well before any limit is reached.
		v := benchEvaluateCPU(b, eng, tmpl, func(i int) {
			if i > 0 && i%(usage.MaxCalls/2) == 0 {
				sig.c = usage.NewCounter(set)
			}
		})
		for _, r := range v.Reasons {
			if r.Source == action.SourceLimit || r.Source == action.SourceBudget {
				b.Fatalf("a control was reached: %+v", r)
			}
		}
		if uses := sig.c.Uses(time.Now()); len(uses) == 0 || uses[0].Count == 0 {
			b.Fatal("nothing was counted")
		}
	})
}

// benchEvaluateCPU is benchEvaluate reporting also the median of the
// process's CPU time per evaluation (p50-cpu-ns): on a machine shared with
// other work, the stable figure. between, when not nil, is called before
// each timed call with its index.
func benchEvaluateCPU(b *testing.B, eng *firewall.Engine, tmpl action.Action, between func(i int)) action.Verdict {
	b.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx := context.Background()
	for range 100 {
		a := tmpl
		eng.Evaluate(ctx, &a)
	}
	walls := make([]time.Duration, b.N)
	cpus := make([]time.Duration, b.N)
	var v action.Verdict
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if between != nil {
			between(i)
		}
		a := tmpl
		c0 := processCPU()
		start := time.Now()
		v = eng.Evaluate(ctx, &a)
		walls[i] = time.Since(start)
		cpus[i] = processCPU() - c0
	}
	b.StopTimer()
	reportLatency(b, walls)
	slices.Sort(cpus)
	b.ReportMetric(float64(cpus[len(cpus)/2].Nanoseconds()), "p50-cpu-ns")
	return v
}

// processCPU is the CPU time the process has spent.
func processCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
