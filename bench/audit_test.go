package bench

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

// BenchmarkAuditAppend measures durable audit appends per second: 32
// goroutines per core append verdict records to a real SQLite file (WAL,
// synchronous=FULL), each Append returning only once its record is
// committed. The log groups concurrent appends into one commit, which is
// what makes the rate. As in live traffic, every record has its own random
// action id and one of many sessions, so the indexes take scattered
// inserts. The chain is verified afterwards (not timed).
func BenchmarkAuditAppend(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(b.TempDir(), "audit.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	log := audit.New(st, clock.Real{})
	data := json.RawMessage(`{"action_id":"","level":"auto","reasons":[{"layer":"L3","source":"rule",` +
		`"name":"shell-git-read","policy_layer":"admin","level":"auto","message":"rule \"shell-git-read\" matched"}],` +
		`"decider":{"layer":"L3","source":"rule","name":"shell-git-read","policy_layer":"admin","level":"auto",` +
		`"message":"rule \"shell-git-read\" matched"},` +
		`"args_hash":"5d41402abc4b2a76b9719d911017c592aa5d41402abc4b2a76b9719d911017c5"}`)
	var n atomic.Int64

	b.SetParallelism(32)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e := audit.Entry{
				Type:     audit.TypeVerdict,
				ActionID: kernel.NewID("act_"),
				Agent:    "claude-code",
				Session:  "sess-" + strconv.FormatInt(n.Add(1)%256, 10),
				Tool:     "Bash",
				Data:     data,
			}
			if _, err := log.Append(ctx, e); err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if err := log.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")

	rep, err := audit.Verify(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	if !rep.OK || rep.Records != int64(b.N) {
		b.Fatalf("chain after %d appends: %+v", b.N, rep)
	}
}
