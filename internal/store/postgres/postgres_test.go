package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/pgtest"
	"github.com/overseer-dev/overseer/internal/store/postgres"
	"github.com/overseer-dev/overseer/internal/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens a store on url, closed when t ends.
func open(t testing.TB, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, pgtest.Database(t)) })
}

func TestConformanceShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		url := pgtest.Database(t)
		return open(t, url), open(t, url)
	})
}

// A server that does not answer makes Open fail within the default
// connect timeout (the URL sets none) rather than hang: a listener that
// accepts and says nothing.
func TestOpenUnansweredServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, silent
		}
	}()
	start := time.Now()
	_, err = postgres.Open(t.Context(), "postgres://x@"+ln.Addr().String()+"/db?sslmode=disable")
	if err == nil {
		t.Fatal("opened a database on a silent server")
	}
	if d := time.Since(start); d > postgres.ConnectTimeout+20*time.Second {
		t.Fatalf("Open took %v", d)
	}
}

// The URL is not repeated in an error: it may hold a password.
func TestOpenBadURLKeepsThePassword(t *testing.T) {
	_, err := postgres.Open(t.Context(), "postgres://u:s3cret@host:notaport/db")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err %v", err)
	}
}

// An append waits for another instance's append (the audit lock), and a
// wait that runs out fails the append, which writes nothing.
func TestAppendWaitsForTheAuditLock(t *testing.T) {
	url := pgtest.Database(t)
	db := open(t, url)
	other, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	tx, err := other.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The lock an append takes (postgres.go: lockClass, auditLock).
	if _, err := tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock($1, $2)`, 0x0b5e, 1); err != nil {
		t.Fatal(err)
	}
	recs := []store.AuditRecord{{Time: storetest.T0, Type: "action", Data: json.RawMessage(`1`)}}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := db.AppendAudit(ctx, recs, storetest.ChainSeal()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an append while another holds the lock: %v, want a deadline", err)
	}
	done := make(chan error, 1)
	go func() { done <- db.AppendAudit(t.Context(), recs, storetest.ChainSeal()) }()
	select {
	case err := <-done:
		t.Fatalf("the append did not wait for the lock: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := db.QueryAudit(t.Context(), store.AuditQuery{})
	if err != nil || len(got) != 1 {
		t.Fatalf("%d records (%v), want the one append that got the lock", len(got), err)
	}
}

// Size counts the tables of the store's own schema: it grows as the store
// is written, and another store's schema on the same server does not count.
func TestSize(t *testing.T) {
	ctx := t.Context()
	db, other := open(t, pgtest.Database(t)), open(t, pgtest.Database(t))
	before, err := db.Size(ctx)
	if err != nil || before <= 0 {
		t.Fatalf("size %d, %v", before, err)
	}
	otherBefore, _ := other.Size(ctx)
	big := []byte(`"` + strings.Repeat("x", 4000) + `"`)
	keys := make([]string, 200)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%03d", i)
	}
	if err := db.UpdateStates(ctx, "ns", keys, func(string, []byte) ([]byte, error) { return big, nil }); err != nil {
		t.Fatal(err)
	}
	after, err := db.Size(ctx)
	if err != nil || after <= before {
		t.Fatalf("size %d after writing, %d before (%v)", after, before, err)
	}
	if otherAfter, _ := other.Size(ctx); otherAfter != otherBefore {
		t.Fatalf("another schema's size moved from %d to %d", otherBefore, otherAfter)
	}
}

// One store at a time leads a name; another takes over when the leader
// gives it up, and when the leader's connection is killed (as when its
// process dies) — the old leader then learns it lost the lead.
func TestLead(t *testing.T) {
	// Restored after the stores close (cleanups run last first), which
	// waits for their leads' goroutines: those read it.
	check := postgres.LeadCheck
	t.Cleanup(func() { postgres.LeadCheck = check })
	postgres.LeadCheck = 50 * time.Millisecond
	url := pgtest.Database(t)
	a, b, c := open(t, url), open(t, url), open(t, url)
	ctx := t.Context()
	actx, acancel := context.WithCancel(ctx)
	lostA, err := a.Lead(actx, "telegram")
	if err != nil {
		t.Fatal(err)
	}
	// Another name is led apart.
	if _, err := b.Lead(ctx, "slack"); err != nil {
		t.Fatal(err)
	}
	got := make(chan (<-chan struct{}), 1)
	go func() {
		l, err := b.Lead(ctx, "telegram")
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	select {
	case <-got:
		t.Fatal("two stores lead one name")
	case <-time.After(300 * time.Millisecond):
	}
	acancel() // a gives the lead up
	<-lostA
	var lostB <-chan struct{}
	select {
	case lostB = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("b does not take the lead a gave up")
	}
	// b's lock connection is killed: b learns it lost the lead, c takes it.
	got2 := make(chan struct{})
	go func() {
		if _, err := c.Lead(ctx, "telegram"); err != nil {
			t.Error(err)
		}
		close(got2)
	}()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND pid <> pg_backend_pid() AND classid = $1`, 0x0b5e+2); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan struct{}{lostB, got2} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("the lead did not move after the leader's connection was killed")
		}
	}
}

// An append that expects the tail its store last wrote, after another
// instance appended since, finds out under the lock, writes nothing of
// its first try, and seals its records again after the true tail: one
// chain, each put written once with its records.
func TestAppendAfterAnotherInstance(t *testing.T) {
	url := pgtest.Database(t)
	a, b := open(t, url), open(t, url)
	seals := 0
	seal := func(tail store.AuditTail, recs []*store.AuditRecord) ([]store.AuditRecord, error) {
		seals++
		prev := tail.Hash
		for i, r := range recs {
			r.Seq, r.PrevHash, r.Time = tail.Seq+int64(i)+1, prev, storetest.T0
			r.Hash = storetest.SimpleHash(prev, *r)
			prev = r.Hash
		}
		return nil, nil
	}
	n := 0
	batch := func(db *postgres.DB) {
		t.Helper()
		ws := make([]*store.AuditWrite, 3)
		for i := range ws {
			n++
			ws[i] = &store.AuditWrite{Rec: store.AuditRecord{Type: "action", Data: json.RawMessage(fmt.Sprint(n))},
				Effect: &store.PutStateEffect{NS: "reads", Key: fmt.Sprint(n), Value: json.RawMessage(`true`)}}
		}
		if err := db.AppendAuditBatch(t.Context(), &store.AuditBatch{Writes: ws, Seal: seal}); err != nil {
			t.Fatal(err)
		}
	}
	batch(a) // a expects its own tail from now on
	batch(a)
	if a.GuessMisses() != 0 {
		t.Fatalf("%d misses with one instance appending", a.GuessMisses())
	}
	batch(b)
	seals = 0
	batch(a) // expects the tail before b's batch
	if a.GuessMisses() != 1 || seals != 2 {
		t.Fatalf("after another instance appended: %d misses, %d seals; want 1 and 2", a.GuessMisses(), seals)
	}
	batch(a)
	if a.GuessMisses() != 1 {
		t.Fatalf("%d misses, want still 1", a.GuessMisses())
	}
	recs, err := a.QueryAudit(t.Context(), store.AuditQuery{})
	if err != nil || len(recs) != n {
		t.Fatalf("%d records (%v), want %d", len(recs), err, n)
	}
	storetest.CheckChain(t, recs)
	reads, err := b.ListState(t.Context(), "reads")
	if err != nil || len(reads) != n {
		t.Fatalf("%d puts written (%v), want %d", len(reads), err, n)
	}
}

// Publish sends its payloads in order, each heard as a change of its own;
// OthersVersion moves with what the watch hears, and fails while nothing
// listens.
func TestPublishAndOthersVersion(t *testing.T) {
	url := pgtest.Database(t)
	a, b := open(t, url), open(t, url)
	if _, err := b.OthersVersion(t.Context()); err == nil {
		t.Fatal("OthersVersion without a watch: no error")
	}
	heard := make(chan store.Change, 100)
	go b.Watch(t.Context(), func(c store.Change) { heard <- c })
	next := func() store.Change {
		t.Helper()
		select {
		case c := <-heard:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("nothing heard")
		}
		return store.Change{}
	}
	if c := next(); c.Kind != store.ChangeResync {
		t.Fatalf("first change %+v, want a resync", c)
	}
	v0, err := b.OthersVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(t.Context(), "k", "one", "two", "three"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one", "two", "three"} {
		if c := next(); c.Kind != "k" || c.ID != want {
			t.Fatalf("heard %+v, want k:%s", c, want)
		}
	}
	v1, err := b.OthersVersion(t.Context())
	if err != nil || v1 == v0 {
		t.Fatalf("OthersVersion %d (%v) after announcements, was %d", v1, err, v0)
	}
	if err := a.Publish(t.Context(), "k", strings.Repeat("x", store.MaxPublish+1)); err == nil {
		t.Fatal("an oversized payload was published")
	}
}

// A database written before state keys were escaped holds its keys as they
// are: the schema's step 3 escapes their '%', after which each key reads
// as itself, beside keys written since.
func TestMigrationEscapesOldStateKeys(t *testing.T) {
	ctx := t.Context()
	url := pgtest.Database(t)
	db := open(t, url)
	c := pgtest.Connect(t, url)
	// Back to version 2, with the keys as version 2 stored them.
	for _, q := range []string{
		`DELETE FROM schema_migrations WHERE version >= 3`,
		`ALTER TABLE state DROP COLUMN full_key`,
		`INSERT INTO state (ns, key, value) VALUES ('old', '100%', '1'), ('old', 'a%41', '2'), ('old', 'plain', '3')`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db = open(t, url)
	if err := db.UpdateState(ctx, "old", "new\x00%", func([]byte) ([]byte, error) { return []byte(`4`), nil }); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"100%": "1", "a%41": "2", "plain": "3", "new\x00%": "4"}
	all, err := db.ListState(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(want) {
		t.Errorf("listed %q, want the keys of %q", all, want)
	}
	for k, v := range want {
		if got, err := db.GetState(ctx, "old", k); err != nil || string(got) != v || string(all[k]) != v {
			t.Errorf("state %q = %q (%v), listed %q, want %s", k, got, err, all[k], v)
		}
	}
	var version int
	if err := c.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil || version != postgres.SchemaVersion() {
		t.Errorf("schema version %d (%v), want %d", version, err, postgres.SchemaVersion())
	}
}

// A read or a write the server does not answer (here: a table another
// client holds locked) fails within its bound instead of waiting for the
// lock or the system's TCP timeout; the statements a read's or a write's
// closure runs are bound too, not only its BEGIN.
func TestReadAndWriteBounded(t *testing.T) {
	defer postgres.SetReadTimeout(300 * time.Millisecond)()
	defer postgres.SetWriteTimeout(300 * time.Millisecond)()
	ctx := t.Context()
	url := pgtest.Database(t)
	db := open(t, url)
	if err := db.UpdateState(ctx, "ns", "k", func([]byte) ([]byte, error) { return []byte(`1`), nil }); err != nil {
		t.Fatal(err)
	}
	c := pgtest.Connect(t, url)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE state, approvals IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"get state (one statement)": func() error { _, err := db.GetState(ctx, "ns", "k"); return err },
		"list approvals (a read transaction)": func() error {
			_, err := db.ListApprovals(ctx, store.ApprovalFilter{})
			return err
		},
		"update states (a write transaction)": func() error {
			return db.UpdateStates(ctx, "ns", []string{"k"}, func(string, []byte) ([]byte, error) { return []byte(`2`), nil })
		},
	} {
		start := time.Now()
		err := op()
		if took := time.Since(start); err == nil || took > 5*time.Second {
			t.Errorf("%s of a locked table: %v after %v, want an error within the bound", name, err, took)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The pool is usable afterwards.
	if v, err := db.GetState(ctx, "ns", "k"); err != nil || string(v) != "1" {
		t.Fatalf("after the lock: %q %v", v, err)
	}
}
