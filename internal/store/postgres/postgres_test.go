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
func open(t *testing.T, url string) *postgres.DB {
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
	defer func(d time.Duration) { postgres.LeadCheck = d }(postgres.LeadCheck)
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
