package usage

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

var t0 = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func mustSet(t testing.TB, limits []RateLimit, caps []BudgetCap) *Set {
	t.Helper()
	s, err := Compile(limits, caps, DefaultPrices)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func lim(id string, max, secs int, act LimitAction) RateLimit {
	return RateLimit{ID: id, MaxCalls: max, WindowSeconds: secs, Action: act, Enabled: true}
}

func call(agent, tool string, at time.Time) *Call {
	return &Call{Agent: agent, Session: "s1", Tool: tool, Level: action.Auto, Now: at}
}

func TestRateLimitActions(t *testing.T) {
	for _, tc := range []struct {
		act     LimitAction
		level   action.Level
		pause   bool
		counted bool // the over-limit call is counted
	}{
		{Block, action.Block, false, false},
		{Pause, action.Block, true, false},
		{NotifyOnly, action.Notify, false, true},
		{Ask, action.Approve, false, true},
	} {
		t.Run(string(tc.act), func(t *testing.T) {
			c := NewCounter(mustSet(t, []RateLimit{lim("rl", 3, 60, tc.act)}, nil))
			for i := 0; i < 3; i++ {
				if f := c.Check(call("a", "Bash", t0.Add(time.Duration(i)*time.Second)), true); len(f) != 0 {
					t.Fatalf("call %d: %+v", i+1, f)
				}
			}
			f := c.Check(call("a", "Bash", t0.Add(10*time.Second)), true)
			if len(f) != 1 || f[0].Level != tc.level || f[0].Pause != tc.pause || f[0].Stop != tc.pause || !f[0].Notice ||
				f[0].Count != 3 || f[0].Max != 3 || f[0].Window != time.Minute || !strings.Contains(f[0].Message, "3 within 1m0s") {
				t.Fatalf("the 4th call: %+v", f)
			}
			f = c.Check(call("a", "Bash", t0.Add(11*time.Second)), true)
			wantCount := 3
			if tc.counted {
				wantCount = 4
			}
			if len(f) != 1 || f[0].Notice || f[0].Count != wantCount {
				t.Fatalf("the 5th call: %+v (want count %d, no second notice)", f, wantCount)
			}
			// Another agent has its own count.
			if f := c.Check(call("b", "Bash", t0.Add(12*time.Second)), true); len(f) != 0 {
				t.Fatalf("another agent: %+v", f)
			}
			// The window slides: 61 s after the first calls they are out.
			later := t0.Add(62 * time.Second)
			if tc.counted {
				later = t0.Add(72 * time.Second)
			}
			if f := c.Check(call("a", "Bash", later), true); len(f) != 0 {
				t.Fatalf("after the window: %+v", f)
			}
		})
	}
}

func TestCheckWithoutCounting(t *testing.T) {
	c := NewCounter(mustSet(t, []RateLimit{lim("rl", 1, 60, Block)}, nil))
	for i := 0; i < 5; i++ {
		if f := c.Check(call("a", "Bash", t0), false); len(f) != 0 {
			t.Fatalf("an evaluation counted: %+v", f)
		}
	}
}

func TestRateLimitMatching(t *testing.T) {
	glob := lim("g", 1, 60, Block)
	glob.Tool = "mcp__*"
	risky := lim("r", 1, 60, Block)
	risky.Risk = "confirm"
	del := lim("d", 1, 60, Block)
	del.Effect = EffectDelete
	newHost := lim("h", 2, 3600, Block)
	newHost.Effect = EffectNewHost
	agentOnly := lim("x", 1, 60, Block)
	agentOnly.Agent = "codex"
	off := lim("off", 1, 60, Block)
	off.Enabled = false
	c := NewCounter(mustSet(t, []RateLimit{glob, risky, del, newHost, agentOnly, off}, nil))

	reached := func(cl *Call) string {
		var ids []string
		for _, f := range c.Check(cl, true) {
			ids = append(ids, f.ID)
		}
		return strings.Join(ids, ",")
	}
	// The first call of each kind is under its limit of 1.
	c.Check(call("a", "mcp__fs__write", t0), true)
	if got := reached(call("a", "mcp__fs__read", t0)); got != "g" {
		t.Errorf("glob: %q", got)
	}
	if got := reached(call("a", "Bash", t0)); got != "" {
		t.Errorf("a tool outside the glob: %q", got)
	}
	confirm := call("a", "Bash", t0)
	confirm.Level = action.Confirm
	c.Check(confirm, true)
	if got := reached(confirm); got != "r" {
		t.Errorf("risk: %q", got)
	}
	rm := call("a", "Bash", t0)
	rm.Delete = true
	c.Check(rm, true)
	if got := reached(rm); got != "d" {
		t.Errorf("delete: %q", got)
	}
	// new hosts: two new ones run, a third is refused; a known one runs.
	send := func(h string) string {
		cl := call("a", "WebFetch", t0)
		cl.Hosts = []string{h}
		return reached(cl)
	}
	if send("a.example") != "" || send("b.example") != "" || send("a.example") != "" {
		t.Error("new hosts under the limit were refused")
	}
	if got := send("c.example"); got != "h" {
		t.Errorf("the third new host: %q", got)
	}
	if got := send("b.example"); got != "" {
		t.Errorf("a known host: %q", got)
	}
	c.Check(call("codex", "Read", t0), true)
	if got := reached(call("codex", "Read", t0)); got != "x" {
		t.Errorf("agent limit: %q", got)
	}
}

func TestBudgetCaps(t *testing.T) {
	stop := BudgetCap{ID: "day", Scope: ScopeGlobal, MaxCostUSD: 1, Period: Daily, Action: Stop, Enabled: true}
	down := BudgetCap{ID: "cheap", Scope: ScopeAgent, MaxCostUSD: 1.5, Period: Weekly, Action: Downgrade, Enabled: true}
	c := NewCounter(mustSet(t, nil, []BudgetCap{stop, down}))
	now := t0
	if al := c.Record("a", "s1", Spend{Cost: 0.5}, now); len(al) != 0 {
		t.Fatalf("50%%: %+v", al)
	}
	al := c.Record("a", "s1", Spend{Cost: 0.35}, now)
	if len(al) != 1 || al[0].Cap.ID != "day" || al[0].Share != AlertAt || !strings.Contains(al[0].Message, "85%") {
		t.Fatalf("85%%: %+v", al)
	}
	if f := c.Check(call("a", "Bash", now), true); len(f) != 0 {
		t.Fatalf("under the cap: %+v", f)
	}
	al = c.Record("b", "s2", Spend{Cost: 0.2}, now)
	if len(al) != 1 || al[0].Share != 1 {
		t.Fatalf("100%%: %+v", al)
	}
	f := c.Check(call("a", "Bash", now), true)
	if len(f) != 1 || f[0].ID != "day" || f[0].Level != action.Block || !f[0].Stop || !strings.Contains(f[0].Message, "$1.05 of $1.00") {
		t.Fatalf("over the cap: %+v", f)
	}
	// The next day the daily cap starts again.
	if f := c.Check(call("a", "Bash", now.Add(24*time.Hour)), true); len(f) != 0 {
		t.Fatalf("the next day: %+v", f)
	}
	// The weekly downgrade cap of agent a: $0.85 + $0.7 = $1.55.
	next := now.Add(24 * time.Hour)
	c.Record("a", "s3", Spend{Cost: 0.7}, next)
	f = c.Check(call("a", "Bash", next), true)
	if len(f) != 1 || f[0].ID != "cheap" || f[0].Level != action.Notify {
		t.Fatalf("downgrade, hooked agent: %+v", f)
	}
	own := call("a", "bash", next)
	own.Driven = true
	if f := c.Check(own, true); len(f) != 0 {
		t.Fatalf("downgrade, own loop: %+v", f)
	}
	c.Record("a", "s3", Spend{Cost: 0.2}, next) // $1.75 ≥ the hard cap of $2.25? no
	if f := c.Check(own, true); len(f) != 0 {
		t.Fatalf("below the hard cap: %+v", f)
	}
	c.Record("b", "s4", Spend{Cost: 0.05}, next)
	c.Record("a", "s3", Spend{Cost: 0.55}, next.Add(time.Hour)) // a: $2.30 this week
	f = c.Check(&Call{Agent: "a", Session: "s3", Driven: true, Now: next.Add(time.Hour)}, true)
	found := false
	for _, x := range f {
		found = found || x.ID == "cheap" && x.Level == action.Block
	}
	if !found {
		t.Fatalf("the hard cap: %+v", f)
	}
	st := c.Budgets(next.Add(time.Hour))
	if len(st) != 3 || st[1].Key != "a" || st[1].Spent < 2.29 || st[1].Spent > 2.31 || st[2].Key != "b" {
		t.Fatalf("budgets: %+v", st)
	}
}

func TestPeriods(t *testing.T) {
	wed := time.Date(2026, 11, 25, 15, 4, 5, 0, time.UTC) // a Wednesday
	for _, tc := range []struct {
		period     string
		start, end time.Time
	}{
		{Daily, time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)},
		{Weekly, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)},
		{Monthly, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if s, e := PeriodStart(tc.period, wed), PeriodEnd(tc.period, wed); !s.Equal(tc.start) || !e.Equal(tc.end) {
			t.Errorf("%s: %v – %v", tc.period, s, e)
		}
	}
	sun := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	if s := PeriodStart(Weekly, sun); !s.Equal(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Sunday's week starts %v", s)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		body, want string
	}{
		{`{"id":"x","max_calls":0,"window_seconds":60}`, "max_calls"},
		{`{"id":"x","max_calls":5,"window_seconds":0}`, "window_seconds"},
		{`{"id":"x","max_calls":5,"window_seconds":60,"action_on_limit":"explode"}`, "action_on_limit"},
		{`{"id":"x","max_calls":5,"window_seconds":60,"risk":"block"}`, "risk"},
		{`{"id":"x","max_calls":5,"window_seconds":60,"effect":"dance"}`, "effect"},
		{`{"id":"x","max_calls":5,"window_seconds":60,"tool":"[a"}`, "glob"},
	} {
		l, err := DecodeRateLimit([]byte(tc.body))
		if err == nil {
			err = l.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
	if _, err := DecodeRateLimit([]byte(`{"id":"x","max_calls":5,"window_seconds":60,"surprise":1}`)); err == nil {
		t.Error("an unknown field was accepted")
	}
	l, err := DecodeRateLimit([]byte(`{"id":"x","max_calls":5,"window_seconds":60}`))
	if err != nil || !l.Enabled || l.Action != Pause || l.Validate() != nil {
		t.Errorf("defaults: %+v %v", l, err)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"id":"c","scope":"galaxy","max_cost_usd":1}`, "scope"},
		{`{"id":"c","scope":"global","scope_id":"x","max_cost_usd":1}`, "scope_id"},
		{`{"id":"c","max_cost_usd":-1}`, "max_cost_usd"},
		{`{"id":"c","max_cost_usd":1,"period":"session"}`, "session"},
		{`{"id":"c","max_cost_usd":2,"hard_cost_usd":1,"action_on_limit":"downgrade"}`, "hard_cost_usd"},
		{`{"id":"c","max_cost_usd":1,"action_on_limit":"pray"}`, "action_on_limit"},
	} {
		c, err := DecodeBudgetCap([]byte(tc.body))
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
}

func TestMergeBuckets(t *testing.T) {
	sec := int64(time.Second)
	now := time.Unix(1000, 0)
	// A 64 s window has 1 s buckets; the stored bucket ending at 930 s is
	// out of the window at 1000 s, the one ending at 990 s is in.
	stored, _ := json.Marshal([]Bucket{{End: 930 * sec, Count: 4}, {End: 990 * sec, Count: 2}})
	b, bs, err := MergeBuckets(stored, []int64{989*sec + 5, 995 * sec, 995*sec + 1}, 64*time.Second, now)
	if err != nil || string(b) != `[{"e":990000000000,"n":3},{"e":996000000000,"n":2}]` || len(bs) != 2 {
		t.Fatalf("merge: %s %v %v", b, bs, err)
	}
	if _, _, err := MergeBuckets([]byte("{"), nil, time.Second, now); err == nil {
		t.Fatal("a broken stored window was read")
	}
	// A long window keeps at most 64 buckets however many calls it holds.
	var fresh []int64
	for i := range 100000 {
		fresh = append(fresh, now.UnixNano()-int64(i)*int64(30*time.Millisecond))
	}
	if _, bs, _ := MergeBuckets(nil, fresh, time.Hour, now); len(bs) > BucketsPerWindow+1 {
		t.Fatalf("%d buckets", len(bs))
	}

	c := NewCounter(mustSet(t, []RateLimit{lim("rl", 2, 60, Block)}, nil))
	// Two calls counted by another process arrive with the flush.
	c.PutWindow(WindowKey("rl", "a"), []Bucket{{End: t0.Add(time.Second).UnixNano(), Count: 2}})
	if f := c.Check(call("a", "x", t0.Add(time.Second/2)), true); len(f) != 1 {
		t.Fatalf("counts from the store are not seen: %+v", f)
	}
	// The bucket leaves the window 60 s after its end.
	if f := c.Check(call("a", "x", t0.Add(62*time.Second)), true); len(f) != 0 {
		t.Fatalf("after the window: %+v", f)
	}
}

func TestPersistRoundTrip(t *testing.T) {
	c := NewCounter(mustSet(t, []RateLimit{lim("rl", 2, 60, Block)}, nil))
	c.Check(call("a", "x", t0), true)
	c.Record("a", "s1", Spend{Cost: 0.25, Input: 10, Output: 2, Calls: 1}, t0)
	d := c.TakeDirty()
	if len(d.Windows) != 1 || len(d.Windows[WindowKey("rl", "a")].Fresh) != 1 || d.Spend[SpendKey("2026-11-25", "a", "s1")].Cost != 0.25 {
		t.Fatalf("dirty %+v", d)
	}
	// While the flush is under way the call still counts, and one more.
	c.Check(call("a", "x", t0.Add(time.Millisecond)), true)
	if f := c.Check(call("a", "x", t0.Add(2*time.Millisecond)), false); len(f) != 1 {
		t.Fatalf("during the flush: %+v", f)
	}
	c.Restore(d)
	d = c.TakeDirty()
	if len(d.Spend) != 1 || len(d.Windows[WindowKey("rl", "a")].Fresh) != 2 {
		t.Fatalf("restored %+v", d)
	}
	_, bs, _ := MergeBuckets(nil, d.Windows[WindowKey("rl", "a")].Fresh, time.Minute, t0)
	c.PutWindow(WindowKey("rl", "a"), bs)
	// Both calls are in the buckets now, counted once.
	if f := c.Check(call("a", "x", t0.Add(3*time.Millisecond)), false); len(f) != 1 || f[0].Count != 2 {
		t.Fatalf("after the flush: %+v", f)
	}
	if d := c.TakeDirty(); len(d.Windows) != 0 {
		t.Fatalf("dirty after the flush: %+v", d)
	}
}

func FuzzDecodeRateLimit(f *testing.F) {
	f.Add([]byte(`{"id":"x","max_calls":5,"window_seconds":60,"tool":"mcp__*","effect":"delete","risk":"confirm","action_on_limit":"ask"}`))
	f.Add([]byte(`{"id":"x","max_calls":0}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := DecodeRateLimit(b)
		if err != nil || l.Validate() != nil {
			return
		}
		s, err := Compile([]RateLimit{l}, nil, nil)
		if err != nil {
			t.Fatalf("a valid limit does not compile: %v", err)
		}
		c := NewCounter(s)
		for i := 0; i <= l.MaxCalls && i < 50; i++ {
			c.Check(&Call{Agent: "a", Tool: "mcp__x", Level: action.Approve, Delete: true, Now: t0}, true)
		}
	})
}

func FuzzDecodeBudgetCap(f *testing.F) {
	f.Add([]byte(`{"id":"c","scope":"session","max_cost_usd":1,"period":"session","action_on_limit":"downgrade","hard_cost_usd":2}`))
	f.Add([]byte(`{"id":"c","max_cost_usd":1e308}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cp, err := DecodeBudgetCap(b)
		if err != nil || cp.Validate() != nil {
			return
		}
		if cp.Action != Notify && !(cp.Hard() >= cp.MaxCostUSD) {
			t.Fatalf("hard cap %v below the cap %v", cp.Hard(), cp.MaxCostUSD)
		}
		c := NewCounter(&Set{Caps: []BudgetCap{cp}})
		c.Record("a", "s", Spend{Cost: cp.MaxCostUSD * 2}, t0)
		c.Check(&Call{Agent: "a", Session: "s", Now: t0}, true)
	})
}

// A lease grants at most half of the room left (at least one call while
// there is room), none when the window is full, is recorded in the bucket
// of its validity's end, and what is given back is free again.
func TestLeaseWindow(t *testing.T) {
	req := LeaseRequest{Want: 100, Max: 10, Window: time.Minute, Until: t0.Add(time.Second).UnixNano()}
	var stored []byte
	var grants []int
	for range 6 {
		b, l, err := LeaseWindow(stored, req, t0)
		if err != nil {
			t.Fatal(err)
		}
		stored = b
		grants = append(grants, l.Granted)
	}
	if got := fmt.Sprint(grants); got != "[5 2 1 1 1 0]" {
		t.Fatalf("grants %s, want [5 2 1 1 1 0]", got)
	}
	var bs []Bucket
	if err := json.Unmarshal(stored, &bs); err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || bs[0].Count != 10 || bs[0].End <= req.Until {
		t.Fatalf("stored %+v: the leases must be in one bucket ending after %d", bs, req.Until)
	}
	// Giving back 3 frees 3 (a lease of at most half of them is granted).
	req.Return = Bucket{End: bs[0].End, Count: 3}
	_, l, err := LeaseWindow(stored, req, t0)
	if err != nil || l.Granted != 1 || l.Count != 8 {
		t.Fatalf("after giving back 3: %+v, %v", l, err)
	}
	// A minute after the lease's end the window is empty again.
	req.Return = Bucket{}
	_, l, _ = LeaseWindow(stored, req, t0.Add(62*time.Second))
	if l.Granted != 5 || l.Count != 5 {
		t.Fatalf("after the window: %+v", l)
	}
	// An unreadable window is an error, counted as full.
	if _, l, err := LeaseWindow([]byte("{"), req, t0); err == nil || l.Granted != 0 {
		t.Fatalf("unreadable window: %+v, %v", l, err)
	}
}

// The recent spend: exact while fresh, to the minute once stored, to the
// hour after a day, dropped after RecentKeep; a flush that failed is
// flushed again, and what was flushed is not counted twice.
func TestRecentSpend(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 30, 0, time.UTC)
	c := NewCounter(nil)
	c.Record("a", "s", Spend{Cost: 1}, now.Add(-90*time.Second))
	c.Record("a", "s", Spend{Cost: 2}, now)
	c.Record("b", "s", Spend{Cost: 4}, now)
	if got := c.CostBetween("a", now.Add(-time.Minute), now); got != 2 {
		t.Fatalf("fresh: the last minute holds %v, want 2", got)
	}
	d := c.TakeDirty()
	if len(d.Costs["a"]) != 2 || len(d.Costs["b"]) != 1 {
		t.Fatalf("dirty costs %+v", d.Costs)
	}
	c.Restore(d) // a failed flush: taken again
	d = c.TakeDirty()
	if len(d.Costs["a"]) != 2 {
		t.Fatalf("after a restore: %+v", d.Costs)
	}
	old, _, err := MergeCosts(nil, []CostSample{{T: now.Add(-30 * time.Hour).UnixNano(), USD: 8}, {T: now.Add(-40 * 24 * time.Hour).UnixNano(), USD: 16}}, now)
	if err != nil {
		t.Fatal(err)
	}
	b, bs, err := MergeCosts(old, d.Costs["a"], now)
	if err != nil {
		t.Fatal(err)
	}
	// 40 days ago: dropped; 30 hours ago: an hour bucket; now: minutes.
	if len(bs) != 3 || bs[0].Size != int64(time.Hour) || bs[0].USD != 8 || bs[1].Size != int64(time.Minute) {
		t.Fatalf("buckets %+v", bs)
	}
	c.PutCosts("a", bs)
	c.Record("a", "s", Spend{Cost: 0.5}, now) // recorded during the flush: still fresh
	// A bucket overlapping the span counts whole: 11:59:00–12:00:00 holds
	// the $1 of 11:59:00, 12:00–12:01 the $2.
	if got := c.CostBetween("a", now.Add(-time.Minute), now); got != 3.5 {
		t.Fatalf("stored: the last minute holds %v, want 3.5", got)
	}
	if got := c.CostBetween("a", now.Add(-31*time.Hour), now.Add(-29*time.Hour)); got != 8 {
		t.Fatalf("30 hours ago: %v", got)
	}
	// Read again: the stored row is kept; a second merge of it is stable.
	_, again, err := MergeCosts(b, nil, now)
	if err != nil || fmt.Sprint(again) != fmt.Sprint(bs) {
		t.Fatalf("merged again %+v, want %+v (%v)", again, bs, err)
	}
	if _, _, err := MergeCosts([]byte("not json"), nil, now); err == nil {
		t.Fatal("an unreadable row was merged")
	}
	// A day later the minutes are hours.
	_, later, _ := MergeCosts(b, nil, now.Add(25*time.Hour))
	for _, x := range later {
		if x.Size != int64(time.Hour) {
			t.Fatalf("a day later %+v", later)
		}
	}
}

// CostBetween's prefix sums agree with summing every overlapping bucket,
// for stored rows of minutes and hours and spans anywhere in them.
func TestCostBetweenMatchesScan(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var fresh []CostSample
	for i := range 3000 {
		at := now.Add(-time.Duration(i*i%(40*24*60)) * time.Minute).Add(-time.Duration(i%60) * time.Second)
		fresh = append(fresh, CostSample{T: at.UnixNano(), USD: float64(i%7+1) / 100})
	}
	_, bs, err := MergeCosts(nil, fresh, now)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCounter(nil)
	c.PutCosts("a", bs)
	for i := range 500 {
		from := now.Add(-time.Duration(i*97%(32*24*60)) * time.Minute).Add(time.Duration(i%3) * 20 * time.Second)
		to := from.Add(time.Duration(i*31%(3*24*60)+1) * time.Minute)
		var want float64
		for _, b := range bs {
			if b.End > from.UnixNano() && b.End-b.Size < to.UnixNano() {
				want += b.USD
			}
		}
		if got := c.CostBetween("a", from, to); math.Abs(got-want) > 1e-9 {
			t.Fatalf("%v–%v: %v, want %v", from, to, got, want)
		}
	}
}

// FuzzLeaseWindow: whatever the stored window holds, a lease never takes
// the window past its limit and never grants a negative count.
func FuzzLeaseWindow(f *testing.F) {
	f.Add([]byte(`[{"e":1,"n":3}]`), 5, 10, int64(0), 0)
	f.Add([]byte(`[]`), 1, 1, int64(1e9), 2)
	f.Add([]byte(`{`), 3, 2, int64(-5), 1)
	f.Fuzz(func(t *testing.T, stored []byte, want, maxCalls int, endBack int64, back int) {
		if maxCalls < 1 || maxCalls > MaxCalls {
			return
		}
		req := LeaseRequest{Want: want, Max: maxCalls, Window: time.Minute, Until: t0.Add(time.Second).UnixNano(),
			Return: Bucket{End: endBack, Count: back}}
		_, l, err := LeaseWindow(stored, req, t0)
		if l.Granted < 0 || err == nil && l.Granted > 0 && l.Count > maxCalls {
			t.Fatalf("lease %+v (%v) for %+v", l, err, req)
		}
	})
}
