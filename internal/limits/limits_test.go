package limits

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
)

func TestQuotasRefuseWithRetryAfterAndRefill(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	q := NewQuotas(Config{
		Session: Scope{Requests: Rate{PerMinute: 60, Burst: 3}},
		All:     Scope{Requests: Rate{PerMinute: 600, Burst: 100}},
	}, clk)
	for i := range 3 {
		if d := q.Take("a", "s1", 10); d != nil {
			t.Fatalf("request %d refused: %+v", i, d)
		}
	}
	d := q.Take("a", "s1", 10)
	if d == nil || d.Scope != "session" || d.What != "requests" || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
		t.Fatalf("4th request: %+v", d)
	}
	// Another session has its own quota.
	if d := q.Take("a", "s2", 10); d != nil {
		t.Fatalf("another session refused: %+v", d)
	}
	clk.Advance(time.Second)
	if d := q.Take("a", "s1", 10); d != nil {
		t.Fatalf("refilled session refused: %+v", d)
	}
}

func TestQuotasAllScopeBoundsEveryone(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	q := NewQuotas(Config{All: Scope{Requests: Rate{PerMinute: 60, Burst: 5}}}, clk)
	ok := 0
	for i := range 50 {
		if q.Take("agent", string(rune('a'+i)), 1) == nil {
			ok++
		}
	}
	if ok != 5 {
		t.Fatalf("%d requests of 50 sessions served, want the burst of 5", ok)
	}
	if d := q.Full(1); d == nil || d.Scope != "all" {
		t.Fatalf("Full = %+v", d)
	}
}

func TestQuotasBytesAllowOneLargeRequestThenDebt(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	q := NewQuotas(Config{Session: Scope{Bytes: Rate{PerMinute: 1000, Burst: 1000}}}, clk)
	if d := q.Take("a", "s", 5000); d != nil {
		t.Fatalf("a request above the burst was refused from a full bucket: %+v", d)
	}
	d := q.Take("a", "s", 10)
	if d == nil || d.What != "bytes" {
		t.Fatalf("no debt: %+v", d)
	}
	// 4000 bytes of debt + 10 at 1000/min: about 4 minutes.
	if d.RetryAfter < 4*time.Minute || d.RetryAfter > 5*time.Minute {
		t.Fatalf("RetryAfter = %v", d.RetryAfter)
	}
	// A refused request charges nothing.
	clk.Advance(d.RetryAfter)
	if d := q.Take("a", "s", 10); d != nil {
		t.Fatalf("after the wait: %+v", d)
	}
}

func TestQuotasForgetIdleKeys(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	q := NewQuotas(Config{MaxKeys: 100, Session: Scope{Requests: Rate{PerMinute: 60, Burst: 2}}}, clk)
	for i := range 1000 {
		q.Take("a", string(rune(0x4e00+i)), 1)
		clk.Advance(time.Second)
	}
	if n := len(q.ses); n > 100 {
		t.Fatalf("%d session keys kept", n)
	}
}

func TestThrottleSlowsWrongGuessesOnly(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	th := NewThrottle(clk)
	for i := range DefaultFreeGuesses {
		if w := th.Wrong("127.0.0.1"); w != 0 {
			t.Fatalf("guess %d throttled: %v", i, w)
		}
	}
	w := th.Wrong("127.0.0.1")
	if w != DefaultBackoffBase {
		t.Fatalf("first throttled guess waits %v", w)
	}
	var last time.Duration
	for range 50 {
		last = th.Wrong("127.0.0.1")
	}
	if last != DefaultBackoffMax {
		t.Fatalf("backoff after 56 guesses is %v, want the cap", last)
	}
	if th.Backoff("10.0.0.2") != 0 {
		t.Fatal("another client is throttled")
	}
	clk.Advance(DefaultForget + time.Second)
	if w := th.Wrong("127.0.0.1"); w != 0 {
		t.Fatalf("not forgotten: %v", w)
	}
}

func TestDatabaseAlarm(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	if err := os.WriteFile(db, make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db+"-wal", make([]byte, 500), 0o600); err != nil {
		t.Fatal(err)
	}
	a := NewAlarms()
	raised := make(chan Alarm, 1)
	a.OnRaise(func(al Alarm) { raised <- al })
	now := time.Unix(1000, 0)
	if n, err := a.CheckDatabase(db, 2000, now); err != nil || n != 1500 || len(a.Active()) != 0 {
		t.Fatalf("under the threshold: %d %v %v", n, err, a.Active())
	}
	if _, err := a.CheckDatabase(db, 1200, now); err != nil || len(a.Active()) != 1 {
		t.Fatalf("over the threshold: %v %v", err, a.Active())
	}
	al := <-raised
	if al.Name != AlarmDatabaseSize || al.Value != 1500 || al.Threshold != 1200 {
		t.Fatalf("alarm: %+v", al)
	}
	// Raised again: no new notice; cleared under 90%.
	a.CheckDatabase(db, 1200, now.Add(time.Minute))
	select {
	case al := <-raised:
		t.Fatalf("told twice: %+v", al)
	case <-time.After(50 * time.Millisecond):
	}
	a.CheckDatabase(db, 1600, now) // 1500 >= 1440: stays
	if len(a.Active()) != 1 {
		t.Fatal("cleared within 10% of the threshold")
	}
	a.CheckDatabase(db, 1700, now)
	if len(a.Active()) != 0 {
		t.Fatal("not cleared")
	}
	if s := Bytes(3 << 29); s != "1.5 GiB" {
		t.Fatalf("Bytes = %q", s)
	}
}

// A shared bucket starts full, grants the need plus up to half the room
// beyond it, refuses with the wait until the need fits, lets a request
// larger than the burst into debt from a full bucket, refills with time
// and takes back what is given back.
func TestDrawBucket(t *testing.T) {
	r := Rate{PerMinute: 60, Burst: 10}
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	b, d, err := DrawBucket(nil, Draw{Rate: r, Need: 1, Want: 8}, now)
	if err != nil || d.Granted != 1+4.5 {
		t.Fatalf("first draw %+v %v", d, err)
	}
	b, d, _ = DrawBucket(b, Draw{Rate: r, Need: 4, Want: 4}, now)
	if d.Granted != 4 {
		t.Fatalf("second draw %+v", d)
	}
	b, d, _ = DrawBucket(b, Draw{Rate: r, Need: 2, Want: 2}, now) // 0.5 left
	if d.Granted != 0 || d.Wait != 1500*time.Millisecond {
		t.Fatalf("over the level %+v", d)
	}
	b, d, _ = DrawBucket(b, Draw{Rate: r, Need: 2, Want: 2, Back: 3}, now) // 3.5
	if d.Granted != 2 {
		t.Fatalf("after giving back %+v", d)
	}
	later := now.Add(time.Minute) // full again
	b, d, _ = DrawBucket(b, Draw{Rate: r, Need: 25, Want: 25}, later)
	if d.Granted != 25 {
		t.Fatalf("a request over the burst from a full bucket %+v", d)
	}
	_, d, _ = DrawBucket(b, Draw{Rate: r, Need: 1, Want: 1}, later.Add(10*time.Second)) // -15 + 10
	if d.Granted != 0 || d.Wait != 6*time.Second {
		t.Fatalf("in debt %+v", d)
	}
	// An unreadable bucket is empty (and refills).
	if _, d, _ := DrawBucket([]byte("{"), Draw{Rate: r, Need: 1, Want: 1}, now); d.Granted != 0 {
		t.Fatalf("unreadable %+v", d)
	}
}

// FuzzDrawBucket: whatever the stored bucket holds, a draw grants the need
// or nothing (never less, never negative), and a refusal says how long.
func FuzzDrawBucket(f *testing.F) {
	f.Add([]byte(`{"l":3,"t":0}`), 60.0, 10.0, 1.0, 4.0, 0.0)
	f.Add([]byte(`{`), 1.0, 1.0, 5.0, 5.0, 2.0)
	f.Fuzz(func(t *testing.T, stored []byte, perMin, burst, need, want, back float64) {
		for _, v := range []float64{perMin, burst, need, want, back} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e12 {
				return
			}
		}
		if burst <= 0 || need <= 0 || want < need {
			return
		}
		now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
		_, d, err := DrawBucket(stored, Draw{Rate: Rate{PerMinute: perMin, Burst: burst}, Need: need, Want: want, Back: back}, now)
		if err != nil {
			return
		}
		if d.Granted != 0 && (d.Granted < need || d.Granted > want+1e-9) || d.Wait < 0 {
			t.Fatalf("drawn %+v", d)
		}
	})
}
