package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
)

// queryPlan returns SQLite's plan for the audit query of q, one line per
// step.
func queryPlan(t testing.TB, d *DB, q store.AuditQuery) string {
	t.Helper()
	query, args := auditSQL(q, false)
	rows, err := d.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "; ")
}

// TestAuditQueryPlans checks that the filters the front ends use are served
// by an index, not by reading the whole log.
func TestAuditQueryPlans(t *testing.T) {
	d := openT(t, filepath.Join(t.TempDir(), "plan.db"))
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		q    store.AuditQuery
		want string // a substring of the plan
	}{
		{"action status", store.AuditQuery{ActionID: "act_1", Types: []string{audit.TypeVerdict, audit.TypeApprovalRequest}}, "USING INDEX audit_action"},
		{"action record", store.AuditQuery{ActionID: "act_1", Types: []string{audit.TypeAction}, Limit: 1}, "USING INDEX audit_action"},
		{"action, newest first", store.AuditQuery{ActionID: "act_1", Desc: true, Limit: 100}, "USING INDEX audit_action"},
		{"agent", store.AuditQuery{Agent: "codex", Desc: true, Limit: 100}, "USING INDEX audit_agent"},
		{"tool", store.AuditQuery{Tool: "Bash", Desc: true, Limit: 100}, "USING INDEX audit_tool"},
		{"type", store.AuditQuery{Types: []string{audit.TypePolicyChange}, Limit: 100}, "USING INDEX audit_type"},
		{"types", store.AuditQuery{Types: []string{"agent_paused", "agent_resumed"}}, "USING INDEX audit_type"},
		// The type index leaves out the records every call writes: a query
		// for them reads the newest first, or a window from the time index.
		{"common type, newest first", store.AuditQuery{Types: []string{audit.TypeAction}, Desc: true, Limit: 100}, "SCAN audit"},
		{"common type in a window", store.AuditQuery{Types: []string{audit.TypeAction, audit.TypeResult}, Since: since,
			Until: since.Add(time.Hour)}, "USING INDEX audit_time"},
		{"time window", store.AuditQuery{Since: since, Until: since.Add(time.Hour)}, "USING INDEX audit_time"},
		{"session reads newest first", store.AuditQuery{Session: "s", Desc: true, Limit: 100}, "SCAN audit"},
		// The sync before every call without auto-rules: rule changes after
		// a position far back (usually none) come from the type index, not
		// a scan of every record since.
		{"types after a position", store.AuditQuery{AfterSeq: 5, Types: []string{"auto_rule_change", "anomaly_rule_change"}},
			"USING INDEX audit_type (type=? AND seq>?)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := queryPlan(t, d, tc.q); !strings.Contains(got, tc.want) {
				t.Fatalf("plan %q, want %q in it", got, tc.want)
			}
		})
	}
}

// TestAuditQueryEmptyValues checks that the index-enabling conditions do not
// change what a filter matches: records with an empty field are found by no
// filter on that field, and a filter finds exactly its records.
func TestAuditQueryEmptyValues(t *testing.T) {
	d := openT(t, filepath.Join(t.TempDir(), "empty.db"))
	log := audit.New(d, clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	entries := []audit.Entry{
		{Type: audit.TypeAction, ActionID: "a1", Agent: "claude-code", Session: "s1", Tool: "Bash"},
		{Type: audit.TypeVerdict, ActionID: "a1", Agent: "claude-code", Session: "s1", Tool: "Bash"},
		{Type: audit.TypePolicyChange},
		{Type: audit.TypeAction, ActionID: "a2", Agent: "codex", Session: "s2", Tool: "shell"},
	}
	if _, err := log.AppendAll(t.Context(), entries...); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		q    store.AuditQuery
		want []int64
	}{
		{"action", store.AuditQuery{ActionID: "a1"}, []int64{1, 2}},
		{"agent", store.AuditQuery{Agent: "codex"}, []int64{4}},
		{"session", store.AuditQuery{Session: "s1"}, []int64{1, 2}},
		{"tool", store.AuditQuery{Tool: "Bash"}, []int64{1, 2}},
		{"action and type", store.AuditQuery{ActionID: "a1", Types: []string{audit.TypeVerdict}}, []int64{2}},
		{"agent and tool", store.AuditQuery{Agent: "claude-code", Tool: "shell"}, nil},
		{"unknown action", store.AuditQuery{ActionID: "nope"}, nil},
		{"no filter", store.AuditQuery{}, []int64{1, 2, 3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := d.QueryAudit(t.Context(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range recs {
				got = append(got, r.Seq)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("seqs %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMigrationFromSchema1 opens a database written with the first schema:
// the session index goes, the chain still verifies and grows, and every
// filter still finds its records.
func TestMigrationFromSchema1(t *testing.T) {
	ctx := t.Context()
	p := filepath.Join(t.TempDir(), "v1.db")
	pools, err := OpenPools(ctx, p, PoolOptions{ForeignKeys: true, Migrations: migrations[:1]})
	if err != nil {
		t.Fatal(err)
	}
	old := &DB{path: pools.Path, w: pools.Write, r: pools.Read}
	if !hasIndex(t, old, "audit_session") {
		t.Fatal("schema 1 has no session index")
	}
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	appendN := func(st store.AuditStore, from, n int) {
		t.Helper()
		l := audit.New(st, clk)
		defer l.Close()
		for i := from; i < from+n; i++ {
			_, err := l.Append(ctx, audit.Entry{Type: audit.TypeAction, ActionID: fmt.Sprintf("a%d", i),
				Agent: "claude-code", Session: fmt.Sprintf("s%d", i%3), Tool: "Bash", Data: map[string]int{"i": i}})
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Second)
		}
	}
	// Records written by a program of schema 1 (without the seal columns).
	prev := audit.Genesis
	for i := 0; i < 30; i++ {
		r := store.AuditRecord{Seq: int64(i + 1), Time: clk.Now(), Type: audit.TypeAction, ActionID: fmt.Sprintf("a%d", i),
			Agent: "claude-code", Session: fmt.Sprintf("s%d", i%3), Tool: "Bash", Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
		r.PrevHash = prev
		r.Hash = audit.Hash(prev, r)
		prev = r.Hash
		if _, err := pools.Write.ExecContext(ctx, `INSERT INTO audit (seq, time, type, action_id, agent, session, tool, data, prev_hash, hash)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.Seq, fmtTime(r.Time), r.Type, r.ActionID, r.Agent, r.Session, r.Tool,
			string(r.Data), r.PrevHash, r.Hash); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	d := openT(t, p)
	if n := countMigrations(t, p); n != len(migrations) {
		t.Fatalf("%d migrations recorded, want %d", n, len(migrations))
	}
	if hasIndex(t, d, "audit_session") {
		t.Fatal("the session index is still there")
	}
	var typeIndex string
	if err := d.r.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'audit_type'`).Scan(&typeIndex); err != nil ||
		!strings.Contains(typeIndex, notCommonType) {
		t.Fatalf("type index %q (%v), want it without the common types", typeIndex, err)
	}
	appendN(d, 30, 30)
	rep, err := audit.Verify(ctx, d)
	if err != nil || !rep.OK || rep.Records != 60 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	recs, err := d.QueryAudit(ctx, store.AuditQuery{Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 20 {
		t.Fatalf("session s1 has %d records, want 20", len(recs))
	}
	for _, r := range recs {
		if r.Session != "s1" {
			t.Fatalf("record %d of session %q", r.Seq, r.Session)
		}
	}
	recs, err = d.QueryAudit(ctx, store.AuditQuery{ActionID: "a7"})
	if err != nil || len(recs) != 1 || recs[0].Seq != 8 {
		t.Fatalf("action a7: %+v, %v", recs, err)
	}
}

func hasIndex(t *testing.T, d *DB, name string) bool {
	t.Helper()
	var n int
	if err := d.r.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// TestWALCheckpointPages checks that the WAL stays near its checkpoint size
// under a stream of commits, and that the size is what bounds it.
func TestWALCheckpointPages(t *testing.T) {
	const commits = 300
	row := strings.Repeat("x", 3000) // about one page per commit
	tests := []struct {
		name      string
		pages     int
		wantBelow bool // the WAL file stays below 40 pages
	}{
		{"small bound", 20, true},
		{"large bound", 10000, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "wal.db")
			pools, err := OpenPools(t.Context(), p, PoolOptions{WALCheckpointPages: tc.pages,
				Migrations: []Migration{{1, "t", []string{`CREATE TABLE t (x TEXT)`}}}})
			if err != nil {
				t.Fatal(err)
			}
			defer pools.Close()
			var got int
			if err := pools.Write.QueryRowContext(t.Context(), "PRAGMA wal_autocheckpoint").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.pages {
				t.Fatalf("wal_autocheckpoint = %d, want %d", got, tc.pages)
			}
			for range commits {
				if _, err := pools.Write.ExecContext(t.Context(), `INSERT INTO t (x) VALUES (?)`, row); err != nil {
					t.Fatal(err)
				}
			}
			fi, err := os.Stat(p + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			const frame = 4096 + 24
			if below := fi.Size() < 40*frame; below != tc.wantBelow {
				t.Fatalf("WAL of %d bytes (%d frames) after %d commits; want below 40 frames: %v",
					fi.Size(), fi.Size()/frame, commits, tc.wantBelow)
			}
		})
	}
}

// BenchmarkAuditQuery100k times the audit queries the front ends run, on a
// log of 100,000 records: three records per action, 256 sessions, a rare
// agent, tool and session among common ones.
func BenchmarkAuditQuery100k(b *testing.B) {
	ctx := context.Background()
	d, err := Open(filepath.Join(b.TempDir(), "q.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	const n = 100000
	data := json.RawMessage(`{"level":"auto","reasons":[{"layer":"L3","source":"rule","name":"shell-git-read",` +
		`"policy_layer":"admin","level":"auto","message":"rule \"shell-git-read\" matched"}],` +
		`"args_hash":"5d41402abc4b2a76b9719d911017c592aa5d41402abc4b2a76b9719d911017c5"}`)
	types := []string{audit.TypeAction, audit.TypeVerdict, audit.TypeResult}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seal := func(tailSeq int64, _ string, recs []store.AuditRecord) error {
		for i := range recs {
			recs[i].Seq = tailSeq + int64(i) + 1
			recs[i].Time = t0.Add(time.Duration(recs[i].Seq) * time.Millisecond)
			recs[i].PrevHash, recs[i].Hash = audit.Genesis, audit.Genesis
		}
		return nil
	}
	for start := 0; start < n; start += 1000 {
		recs := make([]store.AuditRecord, 1000)
		for j := range recs {
			i := start + j
			r := &recs[j]
			r.Type = types[i%3]
			r.ActionID = benchActionID(i / 3)
			r.Agent, r.Tool, r.Session = "claude-code", "Bash", fmt.Sprintf("sess-%d", (i/3)%256)
			if i%50 == 0 {
				r.Agent = "rare-agent"
			}
			if i%1000 == 0 {
				r.Tool = "RareTool"
			}
			if i == 10 || i == 11 || i == 12 {
				r.Session = "rare-session"
			}
			r.Data = data
		}
		if err := d.AppendAudit(ctx, recs, seal); err != nil {
			b.Fatal(err)
		}
	}
	mid := benchActionID(n / 6)
	queries := []struct {
		name string
		q    store.AuditQuery
		want int
	}{
		{"action-status", store.AuditQuery{ActionID: mid, Types: []string{audit.TypeVerdict, audit.TypeApprovalRequest}}, 1},
		{"action-record", store.AuditQuery{ActionID: mid, Types: []string{audit.TypeAction}, Limit: 1}, 1},
		{"agent-common", store.AuditQuery{Agent: "claude-code", Desc: true, Limit: 100}, 100},
		{"agent-rare", store.AuditQuery{Agent: "rare-agent", Desc: true, Limit: 100}, 100},
		{"tool-rare", store.AuditQuery{Tool: "RareTool", Desc: true, Limit: 100}, 100},
		{"session-active", store.AuditQuery{Session: "sess-7", Desc: true, Limit: 100}, 100},
		{"session-rare", store.AuditQuery{Session: "rare-session", Desc: true, Limit: 100}, 3},
	}
	for _, qc := range queries {
		b.Run(qc.name, func(b *testing.B) {
			for b.Loop() {
				recs, err := d.QueryAudit(ctx, qc.q)
				if err != nil {
					b.Fatal(err)
				}
				if len(recs) != qc.want {
					b.Fatalf("%d records, want %d", len(recs), qc.want)
				}
			}
		})
	}
}

// benchActionID returns the scattered id of the i-th action.
func benchActionID(i int) string { return fmt.Sprintf("act_%08x", uint32(i)*2654435761) }

// Audit queries of more shapes than the statement cache keeps still run
// (prepared for their one use), and the cache stays bounded.
func TestAuditQueryShapesBeyondCache(t *testing.T) {
	d := openT(t, filepath.Join(t.TempDir(), "shapes.db"))
	b := auditBatch("t0", false)
	if err := d.AppendAuditBatch(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	var types []string
	for i := range maxQueryStmts + 10 {
		types = append(types, "t"+strconv.Itoa(i))
		recs, err := d.QueryAudit(t.Context(), store.AuditQuery{Types: types})
		if err != nil || len(recs) != 1 {
			t.Fatalf("query with %d types: %d records, %v", len(types), len(recs), err)
		}
	}
	d.qmu.Lock()
	n := len(d.queries)
	d.qmu.Unlock()
	if n != maxQueryStmts {
		t.Fatalf("%d statements kept, want %d", n, maxQueryStmts)
	}
}

// A row of a batch that the database refuses fails the whole batch: no
// record and no effect of it is written (the insert rolls the transaction
// back, OR ROLLBACK), the caller gets the error, and the next batch is
// written after the old tail.
func TestAuditBatchRefusedRowWritesNothing(t *testing.T) {
	ctx := context.Background()
	d, err := Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// A stand-in for any constraint a row can break: no two records of
	// one action may have the same type.
	if _, err := d.w.ExecContext(ctx, `CREATE UNIQUE INDEX refuse_twins ON audit (action_id, type)`); err != nil {
		t.Fatal(err)
	}
	seal := func(tail store.AuditTail, recs []*store.AuditRecord) ([]store.AuditRecord, error) {
		prev := tail.Hash
		if tail.Seq == 0 {
			prev = audit.Genesis
		}
		for i, r := range recs {
			r.Seq, r.Time, r.PrevHash = tail.Seq+int64(i)+1, time.Now().UTC(), prev
			r.Hash = audit.Hash(prev, *r)
			prev = r.Hash
		}
		return nil, nil
	}
	batch := func(ids ...string) *store.AuditBatch {
		b := &store.AuditBatch{Seal: seal}
		for _, id := range ids {
			b.Writes = append(b.Writes, &store.AuditWrite{
				Rec:    store.AuditRecord{Type: audit.TypeAction, ActionID: id, Data: json.RawMessage(`{}`)},
				Effect: &store.PutStateEffect{NS: "reads", Key: "k-" + id, Value: json.RawMessage(`true`)}})
		}
		return b
	}
	if err := d.AppendAuditBatch(ctx, batch("a1")); err != nil {
		t.Fatal(err)
	}
	// Three rows in one statement, the last one refused.
	if err := d.AppendAuditBatch(ctx, batch("a2", "a3", "a2")); err == nil {
		t.Fatal("a batch with a refused row was written")
	}
	for _, key := range []string{"k-a2", "k-a3"} {
		if v, err := d.GetState(ctx, "reads", key); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("state %s of the refused batch: %q, %v", key, v, err)
		}
	}
	if err := d.AppendAuditBatch(ctx, batch("a4")); err != nil {
		t.Fatalf("the batch after the refused one: %v", err)
	}
	recs, err := d.QueryAudit(ctx, store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%d:%s", r.Seq, r.ActionID))
	}
	if strings.Join(got, " ") != "1:a1 2:a4" {
		t.Fatalf("records %v, want 1:a1 2:a4", got)
	}
}

// The multi-row statements are prepared when a batch first needs them, and
// a batch that needs one not prepared yet (its seal adds records) prepares
// it within the transaction: every record is written either way.
func TestAuditStatementsPreparedOnUse(t *testing.T) {
	ctx := context.Background()
	d := openT(t, filepath.Join(t.TempDir(), "lazy.db"))
	prepared := func() (n int) {
		d.pmu.Lock()
		defer d.pmu.Unlock()
		for k := range insertSizes {
			if d.insertStmts[k] != nil {
				n++
			}
		}
		return n
	}
	if n := prepared(); n != 0 {
		t.Fatalf("%d insert statements prepared at open, want none", n)
	}
	extra := 0 // records the seal adds
	seal := func(tail store.AuditTail, recs []*store.AuditRecord) ([]store.AuditRecord, error) {
		prev := tail.Hash
		if tail.Seq == 0 {
			prev = audit.Genesis
		}
		var more []store.AuditRecord
		for i := 0; i < len(recs)+extra; i++ {
			r := &store.AuditRecord{Type: audit.TypeAction, ActionID: fmt.Sprintf("extra-%d-%d", tail.Seq, i), Data: json.RawMessage(`{}`)}
			if i < len(recs) {
				r = recs[i]
			}
			r.Seq, r.Time, r.PrevHash = tail.Seq+int64(i)+1, time.Now().UTC(), prev
			r.Hash = audit.Hash(prev, *r)
			prev = r.Hash
			if i >= len(recs) {
				more = append(more, *r)
			}
		}
		return more, nil
	}
	batch := func(n int) *store.AuditBatch {
		b := &store.AuditBatch{Seal: seal}
		for i := range n {
			b.Writes = append(b.Writes, &store.AuditWrite{
				Rec:    store.AuditRecord{Type: audit.TypeAction, ActionID: fmt.Sprintf("a%d", i), Data: json.RawMessage(`{}`)},
				Effect: &store.PutStateEffect{NS: "reads", Key: fmt.Sprintf("k%d", i), Value: json.RawMessage(`true`)}})
		}
		return b
	}
	if err := d.AppendAuditBatch(ctx, batch(1)); err != nil {
		t.Fatal(err)
	}
	if n := prepared(); n != 1 {
		t.Fatalf("%d insert statements prepared after a one-record batch, want 1", n)
	}
	extra = 3 // 1 + 3 records: the 4-row statement, not prepared yet
	if err := d.AppendAuditBatch(ctx, batch(1)); err != nil {
		t.Fatal(err)
	}
	extra = 0
	if err := d.AppendAuditBatch(ctx, batch(20)); err != nil {
		t.Fatal(err)
	}
	recs, err := d.QueryAudit(ctx, store.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+4+20 {
		t.Fatalf("%d records written, want %d", len(recs), 1+4+20)
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) || i > 0 && r.PrevHash != recs[i-1].Hash {
			t.Fatalf("record %d: seq %d, prev %s: not a chain", i, r.Seq, r.PrevHash)
		}
	}
}
