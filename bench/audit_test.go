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
// what makes the rate. As in live traffic, every record has its own action
// id (time-ordered with random bits, as kernel.MintID mints them) and one
// of many sessions. The chain is verified afterwards (not timed). Two variants:
// unsealed (the hash chain alone) and sealed (each record also carries its
// MAC under the epoch's key, and epochs close with a marker and a key
// evolution, as the daemon runs); bench/run.sh prints them side by side.
func BenchmarkAuditAppend(b *testing.B) {
	b.Run("unsealed", func(b *testing.B) { benchAppend(b, false) })
	b.Run("sealed", func(b *testing.B) { benchAppend(b, true) })
}

func benchAppend(b *testing.B, sealed bool) {
	ctx := context.Background()
	home := b.TempDir()
	st, err := sqlite.Open(filepath.Join(home, "audit.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var (
		sealer *audit.Sealer
		key    audit.VerifyKey
	)
	if sealed {
		sealer = audit.NewSealer(home, audit.SealerOptions{})
		setup, err := sealer.SetUp(ctx, st, home, time.Now)
		if err != nil {
			b.Fatal(err)
		}
		key = setup.Key
	}
	log := audit.NewSealed(st, clock.Real{}, sealer)
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
				ActionID: kernel.NewActionID(),
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

	o := audit.Options{}
	if sealed {
		o.Key, o.SealFile = &key, sealer.Path()
	}
	rep, err := audit.VerifyWith(ctx, st, o)
	if err != nil {
		b.Fatal(err)
	}
	if !rep.OK || rep.Records < int64(b.N) || !sealed && rep.Records != int64(b.N) {
		b.Fatalf("chain after %d appends: %+v", b.N, rep)
	}
}
