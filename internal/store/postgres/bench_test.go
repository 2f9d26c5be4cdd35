package postgres_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/pgtest"
)

// BenchmarkCalls times the store's common calls on a throwaway server on
// this machine, one at a time: a read of one row (a statement on a pooled
// connection), a state update (two pipelined round trips in a
// transaction), a write transaction, and a read of 100 audit records.
// cpu-ns/op is the CPU this process (the client, not the server) spent per
// call: what the store's own code and its driver cost.
func BenchmarkCalls(b *testing.B) {
	ctx := context.Background()
	db := open(b, pgtest.Database(b))
	if err := db.UpdateState(ctx, "bench", "k", func([]byte) ([]byte, error) { return []byte(`{"n":0}`), nil }); err != nil {
		b.Fatal(err)
	}
	recs := make([]store.AuditRecord, 100)
	if err := db.AppendAudit(ctx, recs, func(tail int64, prev string, recs []store.AuditRecord) error {
		for i := range recs {
			recs[i] = store.AuditRecord{Seq: tail + int64(i) + 1, Time: time.Now(), Type: "verdict", ActionID: "a" + strconv.Itoa(i),
				Data: json.RawMessage(`{"level":"auto"}`), PrevHash: prev, Hash: "h" + strconv.Itoa(i)}
			prev = recs[i].Hash
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	run := func(name string, fn func(i int) error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			i := 0
			for b.Loop() {
				if err := fn(i); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
	run("get-state", func(int) error { _, err := db.GetState(ctx, "bench", "k"); return err })
	run("update-state", func(int) error {
		return db.UpdateState(ctx, "bench", "k", func(old []byte) ([]byte, error) { return old, nil })
	})
	run("create-approval", func(i int) error {
		return db.CreateApproval(ctx, &store.Approval{ID: "bench-" + strconv.Itoa(i), CreatedAt: time.Now(), Session: "s"})
	})
	run("query-audit-100", func(int) error {
		recs, err := db.QueryAudit(ctx, store.AuditQuery{Limit: 100})
		if err == nil && len(recs) != 100 {
			b.Fatalf("%d records", len(recs))
		}
		return err
	})
}
