package perception

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func openDB(t testing.TB, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newBus(t testing.TB) (*Bus, *clock.Fake, *sqlite.DB) {
	t.Helper()
	db := openDB(t, filepath.Join(t.TempDir(), "overseer.db"))
	clk := clock.NewFake(t0)
	return New(db, clk), clk, db
}

func TestRecordAnswerStreaks(t *testing.T) {
	b, clk, _ := newBus(t)
	ctx := context.Background()
	type want struct{ appr, rej, consRej, consAppr int }
	steps := []struct {
		approved bool
		elapsed  time.Duration
		want     want
	}{
		{false, 2 * time.Second, want{0, 1, 1, 0}},
		{false, 4 * time.Second, want{0, 2, 2, 0}},
		{false, 6 * time.Second, want{0, 3, 3, 0}},
		{true, 8 * time.Second, want{1, 3, 0, 1}}, // an approval resets the rejection streak
		{true, time.Second, want{2, 3, 0, 2}},
		{false, 3 * time.Second, want{2, 4, 1, 0}}, // and a rejection the approval streak
	}
	var total time.Duration
	for i, s := range steps {
		t.Run(fmt.Sprintf("step %d", i), func(t *testing.T) {
			clk.Advance(time.Minute)
			total += s.elapsed
			got, err := b.RecordAnswer(ctx, "Bash", s.approved, s.elapsed)
			if err != nil {
				t.Fatal(err)
			}
			w := want{got.Approvals, got.Rejections, got.ConsecutiveRejections, got.ConsecutiveApprovals}
			if w != s.want || got.Answers != i+1 || got.Tool != "Bash" {
				t.Errorf("stats = %+v, want %+v with %d answers", got, s.want, i+1)
			}
			if got.LastAnswer != s.elapsed || got.TotalAnswer != total || !got.LastAnswerAt.Equal(clk.Now()) {
				t.Errorf("times = last %v total %v at %v", got.LastAnswer, got.TotalAnswer, got.LastAnswerAt)
			}
			stored, err := b.ToolStats(ctx, "Bash")
			if err != nil {
				t.Fatal(err)
			}
			if stored != got {
				t.Errorf("stored %+v != returned %+v", stored, got)
			}
		})
	}
	if m, _ := b.ToolStats(ctx, "Bash"); m.MeanAnswer() != 4*time.Second {
		t.Errorf("MeanAnswer = %v, want 4s", m.MeanAnswer())
	}
}

func TestToolStatsUnknownAndErrors(t *testing.T) {
	b, _, db := newBus(t)
	ctx := context.Background()
	got, err := b.ToolStats(ctx, "never")
	if err != nil || got != (ToolStats{Tool: "never"}) || got.MeanAnswer() != 0 {
		t.Errorf("unknown tool = %+v, %v; want zero stats", got, err)
	}
	if _, err := b.RecordAnswer(ctx, "", true, time.Second); !errors.Is(err, ErrEmptyTool) {
		t.Errorf("empty tool: %v", err)
	}
	if got, err := b.RecordAnswer(ctx, "neg", true, -time.Second); err != nil || got.TotalAnswer != 0 {
		t.Errorf("negative elapsed: %+v %v", got, err)
	}

	// Unreadable stored statistics are reported, and left alone: resetting
	// them would forget a rejection streak.
	if err := db.UpdateState(ctx, StatsNamespace, "broken", func([]byte) ([]byte, error) {
		return []byte(`{"approvals":"many"}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RecordAnswer(ctx, "broken", false, time.Second); !errors.Is(err, ErrCorrupt) {
		t.Errorf("RecordAnswer on corrupt stats: %v, want ErrCorrupt", err)
	}
	if _, err := b.ToolStats(ctx, "broken"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ToolStats on corrupt stats: %v, want ErrCorrupt", err)
	}
	if _, err := b.AllToolStats(ctx); !errors.Is(err, ErrCorrupt) {
		t.Errorf("AllToolStats with corrupt stats: %v, want ErrCorrupt", err)
	}
	raw, err := db.GetState(ctx, StatsNamespace, "broken")
	if err != nil || string(raw) != `{"approvals":"many"}` {
		t.Errorf("corrupt value changed: %s %v", raw, err)
	}

	db.Close()
	if _, err := b.RecordAnswer(ctx, "Bash", true, time.Second); !errors.Is(err, store.ErrClosed) {
		t.Errorf("RecordAnswer on closed store: %v", err)
	}
	if _, err := b.ToolStats(ctx, "Bash"); err == nil {
		t.Error("ToolStats on a closed store succeeded")
	}
}

// TestToolStatsAcrossProcesses: two buses on two handles of one SQLite file
// count together, even when recording at the same time.
func TestToolStatsAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	clk := clock.NewFake(t0)
	buses := []*Bus{New(openDB(t, path), clk), New(openDB(t, path), clk)}
	ctx := context.Background()

	const perBus = 10
	var wg sync.WaitGroup
	for i, b := range buses {
		wg.Go(func() {
			for range perBus {
				if _, err := b.RecordAnswer(ctx, "Write", i == 0, time.Second); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, b := range buses {
		got, err := b.ToolStats(ctx, "Write")
		if err != nil {
			t.Fatal(err)
		}
		if got.Approvals != perBus || got.Rejections != perBus || got.Answers != 2*perBus || got.TotalAnswer != 2*perBus*time.Second {
			t.Errorf("bus %d sees %+v", i, got)
		}
		if got.ConsecutiveApprovals+got.ConsecutiveRejections < 1 {
			t.Errorf("bus %d: no streak at all: %+v", i, got)
		}
	}

	// Sequential answers from alternating processes keep one streak.
	for _, b := range []*Bus{buses[0], buses[1], buses[0]} {
		if _, err := b.RecordAnswer(ctx, "Fetch", false, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := buses[1].ToolStats(ctx, "Fetch"); got.ConsecutiveRejections != 3 {
		t.Errorf("consecutive rejections across processes = %d, want 3", got.ConsecutiveRejections)
	}
	all, err := buses[0].AllToolStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, s := range all {
		tools = append(tools, s.Tool)
	}
	if !slices.Equal(tools, []string{"Fetch", "Write"}) {
		t.Errorf("AllToolStats tools = %v", tools)
	}
}

func TestToolStatsJSON(t *testing.T) {
	s := ToolStats{Tool: "Bash", Approvals: 2, Answers: 2, TotalAnswer: 3500 * time.Millisecond,
		LastAnswer: 1500 * time.Millisecond, LastAnswerAt: t0}
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m["total_answer_ms"] != 3500.0 || m["last_answer_ms"] != 1500.0 {
		t.Errorf("JSON = %s; want durations in milliseconds", raw)
	}
	var back ToolStats
	if err := json.Unmarshal(raw, &back); err != nil || back != s {
		t.Errorf("round trip = %+v, %v", back, err)
	}
}

func TestRecentWindow(t *testing.T) {
	clk := clock.NewFake(t0)
	b := NewWithLimits(nil, clk, Limits{Actions: 5, ActionAge: 10 * time.Minute})
	for i := range 4 {
		b.RecordAction("s1", "Bash", fmt.Sprintf("h%d", i))
		clk.Advance(time.Minute)
	}
	// Actions at t0, t0+1m, t0+2m, t0+3m; now t0+4m.
	tests := []struct {
		name   string
		window time.Duration
		want   []string
	}{
		{"last 90s", 90 * time.Second, []string{"h3"}},
		{"last 2m (inclusive)", 2 * time.Minute, []string{"h2", "h3"}},
		{"everything", time.Hour, []string{"h0", "h1", "h2", "h3"}},
		{"nothing", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, a := range b.Recent("s1", tt.window) {
				got = append(got, a.ArgsHash)
				if a.Tool != "Bash" {
					t.Errorf("tool %q", a.Tool)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Recent = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("count bound", func(t *testing.T) {
		for i := 4; i < 9; i++ {
			b.RecordAction("s1", "Bash", fmt.Sprintf("h%d", i))
		}
		got := b.Recent("s1", time.Hour)
		if len(got) != 5 || got[0].ArgsHash != "h4" || got[4].ArgsHash != "h8" {
			t.Errorf("after overflow: %v", got)
		}
	})
	t.Run("age bound", func(t *testing.T) {
		clk.Advance(11 * time.Minute)
		b.RecordAction("s1", "Read", "fresh")
		snap := b.Snapshot("s1")
		if len(snap.Actions) != 1 || snap.Actions[0].ArgsHash != "fresh" {
			t.Errorf("old actions kept: %v", snap.Actions)
		}
	})
	if _, err := b.RecordAnswer(context.Background(), "Bash", true, 0); !errors.Is(err, ErrNoStore) {
		t.Errorf("RecordAnswer without a store: %v, want ErrNoStore", err)
	}
	if got := b.Recent("nobody", time.Hour); got != nil {
		t.Errorf("unknown session: %v", got)
	}
}

func TestConfidence(t *testing.T) {
	b := NewWithLimits(nil, clock.NewFake(t0), Limits{Confidences: 4})
	tests := []struct {
		record float64
		window []float64
		streak int // below 0.5
	}{
		{0.9, []float64{0.9}, 0},
		{0.4, []float64{0.9, 0.4}, 1},
		{0.3, []float64{0.9, 0.4, 0.3}, 2},
		{math.NaN(), []float64{0.9, 0.4, 0.3, 0}, 3}, // unreadable counts as none
		{-2, []float64{0.4, 0.3, 0, 0}, 4},
		{7, []float64{0.3, 0, 0, 1}, 0}, // clamped to 1
		{0.5, []float64{0, 0, 1, 0.5}, 0},
		{0.1, []float64{0, 1, 0.5, 0.1}, 1},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("record %d", i), func(t *testing.T) {
			b.RecordConfidence("s", tt.record)
			if got := b.ConfidenceWindow("s"); !slices.Equal(got, tt.window) {
				t.Errorf("window = %v, want %v", got, tt.window)
			}
			if got := b.LowConfidenceStreak("s", 0.5); got != tt.streak {
				t.Errorf("streak = %d, want %d", got, tt.streak)
			}
		})
	}
	w := b.ConfidenceWindow("s")
	w[0] = 42
	if b.ConfidenceWindow("s")[0] == 42 {
		t.Error("ConfidenceWindow returned internal state")
	}
	if b.LowConfidenceStreak("other", 0.5) != 0 || b.ConfidenceWindow("other") != nil {
		t.Error("unknown session has confidence values")
	}
}

func TestStagnation(t *testing.T) {
	b := NewWithLimits(nil, clock.NewFake(t0), Limits{Notes: 2})
	for _, n := range []string{"a", "b", "c"} {
		b.RecordStagnation("s", n)
	}
	if got := b.StagnationCount("s"); got != 3 {
		t.Errorf("count = %d, want 3", got)
	}
	if got := b.Snapshot("s").StagnationNotes; !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("notes = %v", got)
	}
	if b.StagnationCount("x") != 0 {
		t.Error("unknown session stagnates")
	}
}

func TestSessionEviction(t *testing.T) {
	clk := clock.NewFake(t0)
	b := NewWithLimits(nil, clk, Limits{Sessions: 3})
	for _, s := range []string{"a", "b", "c"} {
		b.RecordConfidence(s, 0.5)
		clk.Advance(time.Second)
	}
	b.RecordAction("a", "Bash", "h") // a is now the most recently active
	b.RecordStagnation("d", "new")   // evicts b, the least recently active
	for s, kept := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if got := b.Snapshot(s).LastSeen.IsZero(); got == kept {
			t.Errorf("session %s kept=%v, want %v", s, !got, kept)
		}
	}
	if n := b.Sessions(); n != 3 {
		t.Errorf("Sessions = %d, want 3", n)
	}
	// Reading does not refresh: c stays the least recently active.
	b.Snapshot("c")
	b.Recent("c", time.Hour)
	b.RecordConfidence("e", 1)
	if !b.Snapshot("c").LastSeen.IsZero() {
		t.Error("reading refreshed a session")
	}
}

func TestRecordResultRepeats(t *testing.T) {
	b := NewWithLimits(nil, clock.NewFake(t0), Limits{Tools: 2})
	steps := []struct {
		session, tool, output string
		repeated              bool
		count                 int
	}{
		{"s", "Bash", "same", false, 0},
		{"s", "Bash", "same", true, 1},
		{"s", "Read", "other tool", false, 0}, // another tool in between does not break the run
		{"s", "Bash", "same", true, 2},
		{"t", "Bash", "same", false, 0},  // sessions are separate
		{"s", "Bash", "same ", false, 0}, // one byte differs
		{"s", "Bash", "same", false, 0},
		{"s", "Bash", "same", true, 1},
	}
	for i, s := range steps {
		got := b.RecordResult(s.session, s.tool, s.output, false, "", "")
		if got.Repeated != s.repeated || got.RepeatCount != s.count {
			t.Errorf("step %d: %+v, want repeated=%v count=%d", i, got, s.repeated, s.count)
		}
	}
	snap := b.Snapshot("s")
	if snap.Repeats["Bash"] != 1 || snap.Results[ResultSuccess] != 7 {
		t.Errorf("snapshot repeats %v results %v", snap.Repeats, snap.Results)
	}
	// The per-session tool memory is bounded: a third tool evicts the first.
	b.RecordResult("s", "Write", "w", false, "", "")
	if got := b.RecordResult("s", "Bash", "same", false, "", ""); got.Repeated {
		t.Error("evicted tool still remembered")
	}
}

func TestSnapshotIsACopy(t *testing.T) {
	b := NewWithLimits(nil, clock.NewFake(t0), Limits{})
	b.RecordAction("s", "Bash", "h")
	b.RecordResult("s", "Bash", "error: boom", false, "", "")
	b.RecordStagnation("s", "stuck")
	snap := b.Snapshot("s")
	if snap.Session != "s" || len(snap.Actions) != 1 || snap.Results[ResultFailure] != 1 || snap.Stagnation != 1 ||
		!snap.LastSeen.Equal(t0) {
		t.Fatalf("snapshot = %+v", snap)
	}
	snap.Actions[0].Tool = "changed"
	snap.Results[ResultFailure] = 99
	snap.StagnationNotes[0] = "changed"
	again := b.Snapshot("s")
	if again.Actions[0].Tool != "Bash" || again.Results[ResultFailure] != 1 || again.StagnationNotes[0] != "stuck" {
		t.Errorf("snapshot shares state: %+v", again)
	}
	if got := b.Snapshot("nobody"); got.Session != "nobody" || got.Actions != nil || got.Stagnation != 0 {
		t.Errorf("unknown session snapshot = %+v", got)
	}
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var back SessionStats
	if err := json.Unmarshal(raw, &back); err != nil || back.Results[ResultFailure] != 99 {
		t.Errorf("snapshot JSON round trip: %s → %+v, %v", raw, back, err)
	}
}

// TestBusConcurrent exercises the in-memory signals from many goroutines
// (run with -race).
func TestBusConcurrent(t *testing.T) {
	b := NewWithLimits(nil, clock.NewFake(t0), Limits{Sessions: 4})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			s := fmt.Sprintf("s%d", g%5)
			for i := range 200 {
				b.RecordAction(s, "Bash", fmt.Sprint(i))
				b.RecordConfidence(s, float64(i%10)/10)
				b.RecordResult(s, "Bash", fmt.Sprint(i%3), false, "", "")
				b.Snapshot(s)
				b.LowConfidenceStreak(s, 0.5)
			}
		})
	}
	wg.Wait()
	if n := b.Sessions(); n > 4 {
		t.Errorf("Sessions = %d, want at most 4", n)
	}
}

func BenchmarkRecordAction(b *testing.B) {
	bus := New(nil, clock.NewFake(t0))
	for i := 0; b.Loop(); i++ {
		bus.RecordAction(fmt.Sprint(i%64), "Bash", "hash")
	}
}

func BenchmarkRecordAnswer(b *testing.B) {
	bus, _, _ := newBus(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := bus.RecordAnswer(ctx, "Bash", true, time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRecentToolStatsCache(t *testing.T) {
	ctx := context.Background()
	b, clk, db := newBus(t)
	other := New(db, clk) // another process sharing the database
	if _, err := b.RecentToolStats(ctx, "Write"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.RecordAnswer(ctx, "Write", false, time.Second); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.RecentToolStats(ctx, "Write"); got.Rejections != 0 {
		t.Fatalf("within the TTL the cached value is served: %+v", got)
	}
	if got, _ := b.ToolStats(ctx, "Write"); got.Rejections != 1 {
		t.Fatalf("ToolStats must read the store: %+v", got)
	}
	clk.Advance(StatsCacheTTL + time.Millisecond)
	if got, _ := b.RecentToolStats(ctx, "Write"); got.Rejections != 1 {
		t.Fatalf("after the TTL: %+v", got)
	}
	if _, err := b.RecordAnswer(ctx, "Write", true, time.Second); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.RecentToolStats(ctx, "Write"); got.Approvals != 1 {
		t.Fatalf("an answer through this bus is seen at once: %+v", got)
	}
}

// Samples another process recorded arrive late: they are put in time
// order, the oldest dropped past the limit, and those older than the age
// limit ignored.
func TestRecordSampleAt(t *testing.T) {
	clk := clock.NewFake(t0)
	b := NewWithLimits(nil, clk, Limits{Actions: 3, ActionAge: 10 * time.Minute})
	clk.Advance(5 * time.Minute)
	b.RecordAction("s1", "Bash", "now") // at t0+5m
	b.RecordSampleAt("s1", ActionSample{Tool: "Bash", ArgsHash: "early", Time: t0.Add(time.Minute)})
	b.RecordSampleAt("s1", ActionSample{Tool: "Bash", ArgsHash: "mid", Time: t0.Add(3 * time.Minute)})
	b.RecordSampleAt("s1", ActionSample{Tool: "Bash", ArgsHash: "stale", Time: t0.Add(-6 * time.Minute)})
	var got []string
	for _, s := range b.Recent("s1", time.Hour) {
		got = append(got, s.ArgsHash)
	}
	if fmt.Sprint(got) != "[early mid now]" {
		t.Fatalf("recent %v", got)
	}
	b.RecordSampleAt("s1", ActionSample{Tool: "Bash", ArgsHash: "mid2", Time: t0.Add(4 * time.Minute)})
	got = nil
	for _, s := range b.Recent("s1", time.Hour) {
		got = append(got, s.ArgsHash)
	}
	if fmt.Sprint(got) != "[mid mid2 now]" {
		t.Fatalf("after the limit: %v", got)
	}
}

// A loop approval is counted by session and tool, also for a session the
// bus has not seen (another process's), and the tools kept are bounded.
func TestLoopApprovals(t *testing.T) {
	bus := New(nil, clock.NewFake(t0))
	bus.ForgetTool("s1", "Bash")
	bus.ForgetTool("s1", "Bash")
	bus.ForgetTool("s1", "Edit")
	if got := bus.LoopApprovals("s1", "Bash"); got != 2 {
		t.Fatalf("Bash approvals %d, want 2", got)
	}
	if got := bus.LoopApprovals("s1", "Edit"); got != 1 {
		t.Fatalf("Edit approvals %d, want 1", got)
	}
	if got := bus.LoopApprovals("s2", "Bash"); got != 0 {
		t.Fatalf("another session's approvals %d, want 0", got)
	}
	for i := range maxLoopTools + 10 {
		bus.ForgetTool("s3", fmt.Sprint("tool", i))
	}
	if got := bus.LoopApprovals("s3", fmt.Sprint("tool", maxLoopTools+5)); got != 0 {
		t.Fatalf("a tool past the bound was kept: %d", got)
	}
	if got := bus.LoopApprovals("s3", "tool0"); got != 1 {
		t.Fatalf("tool0 approvals %d, want 1", got)
	}
}
