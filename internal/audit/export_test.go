package audit_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
)

func TestExport(t *testing.T) {
	db, _ := openDB(t)
	l := audit.New(db, clock.NewFake(t0))
	defer l.Close()
	// More than one export page, appended concurrently so that group commit
	// keeps the test fast.
	const n = 2500
	errs := make(chan error, 50)
	for w := range 50 {
		go func() {
			for i := range n / 50 {
				typ := audit.TypeAction
				if i%10 == 0 {
					typ = audit.TypeAnswer
				}
				if _, err := l.Append(t.Context(), audit.Entry{Type: typ, Agent: fmt.Sprint("w", w%3),
					Data: map[string]any{"html": "<script>&</script>", "w": w, "i": i}}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 50 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	queries := []struct {
		name string
		q    store.AuditQuery
	}{
		{"all", store.AuditQuery{}},
		{"after", store.AuditQuery{AfterSeq: 1234}},
		{"limit within a page", store.AuditQuery{Limit: 10}},
		{"limit across pages", store.AuditQuery{Limit: 1500}},
		{"limit of exactly a page", store.AuditQuery{Limit: 1000}},
		{"filter", store.AuditQuery{Types: []string{audit.TypeAnswer}, Agent: "w1"}},
		{"desc limit", store.AuditQuery{Desc: true, Limit: 7}},
		{"text", store.AuditQuery{Text: `"w":7,`}},
		{"none", store.AuditQuery{Agent: "nobody"}},
	}
	for _, c := range queries {
		t.Run(c.name, func(t *testing.T) {
			want, err := db.QueryAudit(t.Context(), c.q)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := audit.Export(t.Context(), db, c.q, &buf); err != nil {
				t.Fatal(err)
			}
			got := decodeAll(buf.Bytes())
			if !sameRecords(got, want) {
				t.Fatalf("exported %d records, query returned %d (or they differ)", len(got), len(want))
			}
			if lines := strings.Count(buf.String(), "\n"); lines != len(want) {
				t.Fatalf("%d lines for %d records", lines, len(want))
			}
			if len(want) > 0 && !strings.Contains(buf.String(), `\u003cscript\u003e\u0026`) {
				t.Fatalf("data not written as stored: %.200s", buf.String())
			}
		})
	}
	t.Run("whole chain verifies offline", func(t *testing.T) {
		var buf bytes.Buffer
		if err := audit.Export(t.Context(), db, store.AuditQuery{}, &buf); err != nil {
			t.Fatal(err)
		}
		rep, err := audit.VerifyJSONL(t.Context(), &buf)
		if err != nil || !rep.OK || rep.Records != n {
			t.Fatalf("report %+v, %v", rep, err)
		}
	})
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

func TestExportErrors(t *testing.T) {
	l, db, _, clk := newLog(t)
	fill(t, l, clk, 3)
	t.Run("writer", func(t *testing.T) {
		boom := errors.New("disk full")
		if err := audit.Export(t.Context(), db, store.AuditQuery{}, failWriter{boom}); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var buf bytes.Buffer
		if err := audit.Export(ctx, db, store.AuditQuery{}, &buf); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestExportUnrepresentableData: data that an export cannot show as stored
// makes Export fail and name the record, rather than export it silently
// changed.
func TestExportUnrepresentableData(t *testing.T) {
	cases := []struct{ name, set string }{
		{"not JSON", `'{"a":'`},
		{"empty", `''`},
		{"leading space", `' ' || data`},
		{"trailing newline", `data || char(10)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, db, p, clk := newLog(t)
			fill(t, l, clk, 3)
			raw, err := sql.Open("sqlite", p)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			execT(t, raw, `UPDATE audit SET data = `+c.set+` WHERE seq = 2`)
			var buf bytes.Buffer
			err = audit.Export(t.Context(), db, store.AuditQuery{}, &buf)
			if err == nil || !strings.Contains(err.Error(), "record 2") {
				t.Fatalf("err = %v, want one naming record 2", err)
			}
		})
	}
}

// TestTail follows the log with a fake clock: no sleeping, the poll fires
// when the test advances the clock.
func TestTail(t *testing.T) {
	l, db, _, _ := newLog(t)
	for i := range 3 {
		if _, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction, Data: i}); err != nil {
			t.Fatal(err)
		}
	}
	clk := clock.NewFake(t0)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan store.AuditRecord, 100)
	done := make(chan error, 1)
	go func() {
		done <- audit.Tail(ctx, db, 1, time.Second, clk, func(r store.AuditRecord) error {
			got <- r
			return nil
		})
	}()
	expect := func(seqs ...int64) {
		t.Helper()
		for _, s := range seqs {
			select {
			case r := <-got:
				if r.Seq != s {
					t.Fatalf("got record %d, want %d", r.Seq, s)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("record %d never came", s)
			}
		}
	}
	waitPoll := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for clk.Waiters() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("Tail never waited for its poll")
			}
			time.Sleep(time.Millisecond)
		}
	}
	expect(2, 3)
	waitPoll()
	for i := range 2 {
		if _, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeResult, Data: i}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-got:
		t.Fatalf("record %d delivered before the poll", r.Seq)
	default:
	}
	clk.Advance(time.Second)
	expect(4, 5)
	waitPoll()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Tail returned %v, want context.Canceled", err)
	}
}

func TestTailStopsOnFnError(t *testing.T) {
	l, db, _, clk := newLog(t)
	fill(t, l, clk, 5)
	stop := errors.New("enough")
	var seen []int64
	err := audit.Tail(t.Context(), db, 0, 0, clk, func(r store.AuditRecord) error {
		seen = append(seen, r.Seq)
		if r.Seq == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || fmt.Sprint(seen) != "[1 2 3]" {
		t.Fatalf("err %v, seen %v", err, seen)
	}
}

func TestTailStoreError(t *testing.T) {
	_, db, _, clk := newLog(t)
	db.Close()
	err := audit.Tail(t.Context(), db, 0, time.Second, clk, func(store.AuditRecord) error { return nil })
	if !errors.Is(err, store.ErrClosed) {
		t.Fatalf("err = %v, want store.ErrClosed", err)
	}
}

// The data of an appended record is JSON and survives export unchanged.
func TestExportDataRoundTrip(t *testing.T) {
	l, db, _, _ := newLog(t)
	in := map[string]any{"s": "a\u2028b<>&\"\\", "n": 1.5, "l": []any{nil, true}}
	rec, err := l.Append(t.Context(), audit.Entry{Type: audit.TypeAction, Data: in})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := audit.Export(t.Context(), db, store.AuditQuery{}, &buf); err != nil {
		t.Fatal(err)
	}
	recs := decodeAll(buf.Bytes())
	if len(recs) != 1 || !bytes.Equal(recs[0].Data, rec.Data) {
		t.Fatalf("exported %s, appended %s", buf.String(), rec.Data)
	}
	var back map[string]any
	if err := json.Unmarshal(recs[0].Data, &back); err != nil || back["s"] != in["s"] {
		t.Fatalf("data %v, %v", back, err)
	}
}
