package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store/pgtest"
	"github.com/overseer-dev/overseer/internal/store/postgres"
)

// BenchmarkAuditAppendPostgres is BenchmarkAuditAppend's sealed variant on
// PostgreSQL (a throwaway server on this machine, fsync on), with the
// appends spread over 1 or 3 instances: each its own store handle, home
// (a copy of the sealing key) and Log, as a fleet's daemons are. Every
// batch a Log commits takes the database's audit lock for its commit, so
// the instances write one chain; "instances-3" shows what that costs
// against one instance. The chain is verified afterwards (not timed).
func BenchmarkAuditAppendPostgres(b *testing.B) {
	c, err := pgtest.Start(pgtest.Options{Durable: true})
	if err != nil {
		if os.Getenv("CI") == "true" {
			b.Fatal(err)
		}
		b.Skip("SKIPPED: PostgreSQL is needed: " + err.Error())
	}
	defer c.Stop()
	for _, n := range []int{1, 3} {
		b.Run("instances-"+strconv.Itoa(n), func(b *testing.B) { benchAppendPostgres(b, c, n) })
	}
}

func benchAppendPostgres(b *testing.B, c *pgtest.Cluster, instances int) {
	ctx := context.Background()
	_, url, err := c.CreateDatabase(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var (
		logs []*audit.Log
		key  audit.VerifyKey
	)
	for i := range instances {
		st, err := postgres.Open(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		home := b.TempDir()
		sealer := audit.NewSealer(home, audit.SealerOptions{})
		if i == 0 {
			setup, err := sealer.SetUp(ctx, st, home, time.Now)
			if err != nil {
				b.Fatal(err)
			}
			key = setup.Key
		} else {
			k, err := os.ReadFile(filepath.Join(logs[0].Sealer().Path()))
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(sealer.Path(), k, 0o600); err != nil {
				b.Fatal(err)
			}
		}
		logs = append(logs, audit.NewSealed(st, clock.Real{}, sealer))
	}
	data := json.RawMessage(`{"action_id":"","level":"auto","reasons":[{"layer":"L3","source":"rule",` +
		`"name":"shell-git-read","policy_layer":"admin","level":"auto","message":"rule \"shell-git-read\" matched"}],` +
		`"args_hash":"5d41402abc4b2a76b9719d911017c592aa5d41402abc4b2a76b9719d911017c5"}`)
	var n, worker atomic.Int64

	b.SetParallelism(32)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		log := logs[int(worker.Add(1))%len(logs)]
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
	for _, l := range logs {
		l.Close()
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")

	st, err := postgres.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	rep, err := audit.VerifyWith(ctx, st, audit.Options{Key: &key})
	if err != nil {
		b.Fatal(err)
	}
	if !rep.OK || rep.Records < int64(b.N) {
		b.Fatalf("chain after %d appends: %+v", b.N, rep)
	}
}
