package sqlite

import (
	"context"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/store"
)

// mintedActionID is the id of the n-th action of a load that starts at t0
// and mints a thousand actions a millisecond, shaped as the kernel mints
// them (kernel.NewActionID: the time in milliseconds, then random bits),
// so that the index on action ids takes its inserts where it does in a
// daemon: at its end. (Scattered ids put each record's entry on a page of
// its own and made this benchmark's writer a third slower than a
// daemon's.)
func mintedActionID(t0 time.Time, n int) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t0.UnixMilli()+int64(n/1000))<<16)
	binary.BigEndian.PutUint16(b[6:8], uint16(n*40503))
	binary.BigEndian.PutUint64(b[8:], uint64(n)*0x9e3779b97f4a7c15)
	return "act_" + base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding).EncodeToString(b[:])
}

// BenchmarkAppendAuditBatch times the audit writer's batches as the API
// writes them under load: 32 auto actions per batch, each an action record
// and a verdict record that carries the read record of the file it reads
// (a state put), committed in one transaction. Its unit is a submission
// (two records and a state put); the sync is left out (DeferSync, not
// called), so that the figure is the CPU of the commit.
func BenchmarkAppendAuditBatch(b *testing.B) {
	ctx := context.Background()
	d, err := Open(filepath.Join(b.TempDir(), "b.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	act := json.RawMessage(`{"id":"act_0000000000000000000000","tool":"Read","kind":"file_read","agent":"bench",` +
		`"session":"load-1","args":{"file_path":"README.md"},"cwd":"/home/user/proj","facts":{"paths":[{"path":` +
		`"/home/user/proj/README.md","intent":"read","in_cwd":true}]}}`)
	ver := json.RawMessage(`{"level":"auto","reasons":[{"layer":"L3","source":"rule","name":"read-in-project",` +
		`"policy_layer":"builtin","level":"auto","message":"rule \"read-in-project\" matched"}],` +
		`"args_hash":"5d41402abc4b2a76b9719d911017c592aa5d41402abc4b2a76b9719d911017c5"}`)
	read := json.RawMessage(`{"hash":"5d41402abc4b2a76b9719d911017c592aa5d41402abc4b2a76b9719d911017c5",` +
		`"mtime":"2026-11-25T12:00:00Z","full":true,"at":"2026-11-25T12:00:00Z"}`)
	const perBatch = 32
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for done := 0; done < b.N; done += perBatch {
		batch := &store.AuditBatch{DeferSync: true}
		for range perBatch {
			n++
			id, sess := mintedActionID(t0, n), "load-"+strconv.Itoa(n)
			batch.Writes = append(batch.Writes,
				&store.AuditWrite{Rec: store.AuditRecord{Type: audit.TypeAction, ActionID: id, Agent: "bench", Session: sess, Tool: "Read", Data: act}},
				&store.AuditWrite{Rec: store.AuditRecord{Type: audit.TypeVerdict, ActionID: id, Agent: "bench", Session: sess, Tool: "Read", Data: ver},
					Effect: &store.PutStateEffect{NS: "reads", Key: sess + "\x00/home/user/proj/README.md", Value: read}})
		}
		batch.Seal = func(tail store.AuditTail, recs []*store.AuditRecord) ([]store.AuditRecord, error) {
			prev := tail.Hash
			for i, r := range recs {
				r.Seq = tail.Seq + int64(i) + 1
				r.Time = t0.Add(time.Duration(r.Seq) * time.Microsecond)
				r.PrevHash = prev
				r.Hash = audit.Hash(prev, *r)
				prev = r.Hash
			}
			return nil, nil
		}
		if err := d.AppendAuditBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
