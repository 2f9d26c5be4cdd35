package audit_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

// TestHashVector pins the hash to its documented definition, computed here
// independently.
func TestHashVector(t *testing.T) {
	r := store.AuditRecord{Seq: 42, Time: time.Date(2025, 6, 1, 8, 30, 0, 500000000, time.FixedZone("CEST", 2*3600)),
		Type: "verdict", ActionID: "a1", Agent: "codex", Session: "", Tool: "Bash", Data: json.RawMessage(`{"level":"auto"}`)}
	canon := "prev\n" + "2:42," + "22:2025-06-01T06:30:00.5Z," + "7:verdict," + "2:a1," + "5:codex," + "0:," + "4:Bash," +
		`16:{"level":"auto"},`
	sum := sha256.Sum256([]byte(canon))
	if got, want := audit.Hash("prev", r), hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("Hash = %s, want %s", got, want)
	}
}

// TestHashCoversEveryField: changing any hashed field, or moving bytes
// between adjacent fields, changes the hash.
func TestHashCoversEveryField(t *testing.T) {
	base := store.AuditRecord{Seq: 7, Time: t0, Type: "action", ActionID: "a", Agent: "ag", Session: "se", Tool: "to",
		Data: json.RawMessage(`{"x":1}`), PrevHash: "ignored", Hash: "ignored"}
	h0 := audit.Hash("p", base)
	cases := []struct {
		name   string
		prev   string
		change func(r *store.AuditRecord)
	}{
		{"prev", "q", func(*store.AuditRecord) {}},
		{"seq", "p", func(r *store.AuditRecord) { r.Seq = 8 }},
		{"time", "p", func(r *store.AuditRecord) { r.Time = r.Time.Add(time.Nanosecond) }},
		{"type", "p", func(r *store.AuditRecord) { r.Type = "verdict" }},
		{"action id", "p", func(r *store.AuditRecord) { r.ActionID = "b" }},
		{"agent", "p", func(r *store.AuditRecord) { r.Agent = "other" }},
		{"session", "p", func(r *store.AuditRecord) { r.Session = "" }},
		{"tool", "p", func(r *store.AuditRecord) { r.Tool = "tool" }},
		{"data", "p", func(r *store.AuditRecord) { r.Data = json.RawMessage(`{"x":2}`) }},
		{"data whitespace", "p", func(r *store.AuditRecord) { r.Data = json.RawMessage(`{"x": 1}`) }},
		{"bytes moved between fields", "p", func(r *store.AuditRecord) { r.Agent, r.Session = "ags", "e" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base
			c.change(&r)
			if audit.Hash(c.prev, r) == h0 {
				t.Fatal("hash unchanged")
			}
		})
	}
	t.Run("stored hashes ignored", func(t *testing.T) {
		r := base
		r.PrevHash, r.Hash = "x", "y"
		if audit.Hash("p", r) != h0 {
			t.Fatal("hash depends on the record's own hash fields")
		}
	})
	t.Run("zone does not matter", func(t *testing.T) {
		r := base
		r.Time = r.Time.In(time.FixedZone("W", -4*3600))
		if audit.Hash("p", r) != h0 {
			t.Fatal("hash depends on the time zone")
		}
	})
}

func TestAppendReturnsCommittedRecord(t *testing.T) {
	l, db, _, clk := newLog(t)
	first, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction, ActionID: "a1", Agent: "codex",
		Session: "s", Tool: "Bash", Data: map[string]any{"command": "ls", "b": 1}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	second, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeVerdict, Data: json.RawMessage(" { \"level\" : \"auto\" } ")})
	if err != nil {
		t.Fatal(err)
	}
	if first.Seq != 1 || first.PrevHash != audit.Genesis || !first.Time.Equal(t0) {
		t.Fatalf("first record %+v", first)
	}
	if second.Seq != 2 || second.PrevHash != first.Hash || !second.Time.Equal(t0.Add(time.Second)) {
		t.Fatalf("second record %+v", second)
	}
	if string(first.Data) != `{"b":1,"command":"ls"}` || string(second.Data) != `{"level":"auto"}` {
		t.Fatalf("data not canonical compact JSON: %s, %s", first.Data, second.Data)
	}
	stored, err := db.QueryAudit(t.Context(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []store.AuditRecord{first, second} {
		got := stored[i]
		if got.Seq != want.Seq || !got.Time.Equal(want.Time) || got.Type != want.Type || string(got.Data) != string(want.Data) ||
			got.Hash != want.Hash || got.PrevHash != want.PrevHash || got.Agent != want.Agent {
			t.Fatalf("stored %+v, returned %+v", got, want)
		}
	}
}

func TestAppendConcurrent(t *testing.T) {
	l, db, _, _ := newLog(t)
	const workers, each = 64, 25
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]string{}
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				rec, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction, Agent: fmt.Sprint("w", w),
					Data: map[string]int{"w": w, "i": i}})
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				mu.Lock()
				if _, dup := seen[rec.Seq]; dup {
					t.Errorf("seq %d returned twice", rec.Seq)
				}
				seen[rec.Seq] = rec.Hash
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	rep, err := audit.Verify(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Records != workers*each || rep.LastSeq != workers*each {
		t.Fatalf("report %+v", rep)
	}
	recs, err := db.QueryAudit(t.Context(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if seen[r.Seq] != r.Hash {
			t.Fatalf("record %d: stored hash differs from the one returned to its appender", r.Seq)
		}
	}
}

// TestTwoLogsOneFile: two processes' logs (two handles on one file) append
// concurrently and still form one valid chain.
func TestTwoLogsOneFile(t *testing.T) {
	db1, p := openDB(t)
	db2, err := sqlite.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	clk := clock.NewFake(t0)
	logs := []*audit.Log{audit.New(db1, clk), audit.New(db2, clk)}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if _, err := logs[w%2].Append(t.Context(), audit.Entry{Type: audit.TypeResult, Data: []int{w, i}}); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, l := range logs {
		l.Close()
	}
	rep, err := audit.Verify(t.Context(), db2)
	if err != nil || !rep.OK || rep.Records != 16*20 {
		t.Fatalf("report %+v, %v", rep, err)
	}
}

func TestAppendInvalid(t *testing.T) {
	l, db, _, _ := newLog(t)
	cases := []struct {
		name string
		e    audit.Entry
	}{
		{"empty type", audit.Entry{Data: 1}},
		{"unencodable data", audit.Entry{Type: audit.TypeAction, Data: make(chan int)}},
		{"invalid raw JSON", audit.Entry{Type: audit.TypeAction, Data: json.RawMessage(`{"a":`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := l.Append(t.Context(), c.e); !errors.Is(err, audit.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	recs, err := db.QueryAudit(t.Context(), store.AuditQuery{})
	if err != nil || len(recs) != 0 {
		t.Fatalf("invalid entries wrote %d records (%v)", len(recs), err)
	}
}

func TestAppendInvalidUTF8Sanitised(t *testing.T) {
	l, db, _, _ := newLog(t)
	rec, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction, Agent: "a\xffb", Data: "x\xfey"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Agent != "a\uFFFDb" {
		t.Fatalf("agent %q", rec.Agent)
	}
	rep, err := audit.Verify(t.Context(), db)
	if err != nil || !rep.OK {
		t.Fatalf("verify %+v %v", rep, err)
	}
}

func TestAppendAfterClose(t *testing.T) {
	l, _, _, _ := newLog(t)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction}); !errors.Is(err, audit.ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

// TestCloseDrains: Close while appends are in flight; every Append either
// succeeded (and its record is in the chain) or was refused with ErrClosed.
func TestCloseDrains(t *testing.T) {
	l, db, _, _ := newLog(t)
	var (
		wg       sync.WaitGroup
		ok       atomic.Int64
		started  = make(chan struct{})
		stopOnce sync.Once
	)
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				_, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction, Data: []int{w, i}})
				if errors.Is(err, audit.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
				if ok.Add(1) == 200 {
					stopOnce.Do(func() { close(started) })
				}
			}
		}()
	}
	<-started
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	rep, err := audit.Verify(t.Context(), db)
	if err != nil || !rep.OK {
		t.Fatalf("verify %+v %v", rep, err)
	}
	if rep.Records != ok.Load() {
		t.Fatalf("%d records in the chain, %d appends reported success", rep.Records, ok.Load())
	}
}

// TestAppendStoreClosed: the store going away makes Append fail (the caller
// then fails closed).
func TestAppendStoreClosed(t *testing.T) {
	l, db, _, _ := newLog(t)
	if _, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction})
	if !errors.Is(err, store.ErrClosed) {
		t.Fatalf("err = %v, want store.ErrClosed", err)
	}
}

// failingStore wraps a real store: the first AppendAudit waits until
// released, so that later appends queue into one batch; appends fail while
// fail is set.
type failingStore struct {
	store.AuditStore
	entered chan struct{}
	release chan struct{}
	fail    atomic.Bool
	calls   atomic.Int64
	sizes   chan int
}

var errInjected = errors.New("injected failure")

func (f *failingStore) AppendAuditBatch(ctx context.Context, b *store.AuditBatch) error {
	if f.calls.Add(1) == 1 {
		close(f.entered)
		<-f.release
	}
	f.sizes <- len(b.Writes)
	if f.fail.Load() {
		return errInjected
	}
	return f.AuditStore.AppendAuditBatch(ctx, b)
}

// TestAppendErrorReachesEveryCallerInBatch.
func TestAppendErrorReachesEveryCallerInBatch(t *testing.T) {
	db, _ := openDB(t)
	fs := &failingStore{AuditStore: db, entered: make(chan struct{}), release: make(chan struct{}), sizes: make(chan int, 100)}
	l := audit.New(fs, clock.NewFake(t0))
	defer l.Close()

	firstErr := make(chan error, 1)
	go func() {
		_, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction})
		firstErr <- err
	}()
	<-fs.entered // the writer is inside the first batch
	const n = 20
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction, Data: i})
			errs <- err
		}()
	}
	// Wait until all n are queued: they must go into one batch. Queued
	// requests are not observable, so poll the queue through a probe: the
	// batch is formed only after release, and n goroutines start quickly.
	waitQueued(t, l, n)
	fs.fail.Store(true)
	close(fs.release)
	if err := <-firstErr; !errors.Is(err, errInjected) {
		t.Fatalf("first append: %v", err)
	}
	for range n {
		if err := <-errs; !errors.Is(err, errInjected) {
			t.Fatalf("batched append: %v, want the batch's error", err)
		}
	}
	if s1, s2 := <-fs.sizes, <-fs.sizes; s1 != 1 || s2 != n {
		t.Fatalf("batches of %d and %d, want 1 and %d", s1, s2, n)
	}
	rep, err := audit.Verify(t.Context(), db)
	if err != nil || rep.Records != 0 {
		t.Fatalf("failed batches wrote records: %+v %v", rep, err)
	}
	// The store recovers: later appends succeed.
	fs.fail.Store(false)
	if _, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction}); err != nil {
		t.Fatalf("append after recovery: %v", err)
	}
}

func TestAppendCanceled(t *testing.T) {
	l, db, _, _ := newLog(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.Append(ctx, audit.Entry{Type: audit.TypeAction}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	recs, err := db.QueryAudit(t.Context(), store.AuditQuery{})
	if err != nil || len(recs) != 0 {
		t.Fatalf("a canceled append was written: %d records, %v", len(recs), err)
	}
}

// Data given as Encoded is stored as it is; the same bytes as a
// json.RawMessage are compacted: both records hash and verify.
func TestAppendEncodedKept(t *testing.T) {
	ctx := context.Background()
	l, st, _, _ := newLog(t)
	enc, err := json.Marshal(map[string]any{"cmd": "a <b> & c", "n": 1})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := l.Append(ctx, audit.Entry{Type: "x", Data: audit.Encoded(enc)})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := l.Append(ctx, audit.Entry{Type: "x", Data: json.RawMessage(` { "a" : 1 } `)})
	if err != nil {
		t.Fatal(err)
	}
	if string(r1.Data) != string(enc) {
		t.Fatalf("Encoded stored as %s, want %s", r1.Data, enc)
	}
	if string(r2.Data) != `{"a":1}` {
		t.Fatalf("RawMessage stored as %s", r2.Data)
	}
	if rep, err := audit.Verify(ctx, st); err != nil || !rep.OK || rep.Records != 2 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}
