package usage

import (
	"testing"
	"time"
)

// FuzzMergeCosts: a stored row of any content merges without panicking,
// into buckets in order, none older than RecentKeep nor wider than an
// hour, and the spend is never negative.
func FuzzMergeCosts(f *testing.F) {
	f.Add([]byte(`[{"e":1764072060000000000,"s":60000000000,"c":1.5}]`), int64(0), 0.25)
	f.Add([]byte(`[{"e":-1,"s":-5,"c":-3}]`), int64(-1), -1.0)
	f.Add([]byte(`null`), int64(1<<62), 1e300)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, stored []byte, at int64, usd float64) {
		_, bs, err := MergeCosts(stored, []CostSample{{T: now.UnixNano() + at%int64(RecentKeep), USD: usd}}, now)
		if err != nil {
			return
		}
		for i, b := range bs {
			if b.End <= now.UnixNano()-int64(RecentKeep) || b.Size <= 0 || b.Size > int64(time.Hour) || !(b.USD > 0) {
				t.Fatalf("bucket %+v", b)
			}
			if i > 0 && b.End < bs[i-1].End {
				t.Fatalf("out of order: %+v", bs)
			}
		}
	})
}
