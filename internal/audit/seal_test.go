package audit_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

func TestVerifyKeyString(t *testing.T) {
	k, err := audit.NewVerifyKey()
	if err != nil {
		t.Fatal(err)
	}
	s := k.String()
	if !strings.HasPrefix(s, "ovk1-") || len(s) > 45 {
		t.Fatalf("key %q", s)
	}
	for _, in := range []string{s, strings.ToUpper(s), " " + strings.ReplaceAll(s, "-", "") + "\n"} {
		got, err := audit.ParseVerifyKey(in)
		if err != nil || got != k {
			t.Fatalf("parse %q: %v", in, err)
		}
	}
	typo := []byte(s)
	if typo[6] == 'a' {
		typo[6] = 'b'
	} else {
		typo[6] = 'a'
	}
	if _, err := audit.ParseVerifyKey(string(typo)); !errors.Is(err, audit.ErrBadKey) {
		t.Fatalf("a typo parsed: %v", err)
	}
	// Each epoch key derives from the one before; none repeats.
	seen := map[audit.EpochKey]bool{}
	e := k.FirstKey()
	for range 100 {
		if seen[e] {
			t.Fatal("an epoch key repeats")
		}
		seen[e] = true
		e = e.Next()
	}
}

// sealed opens a sealing log on a fresh home.
func sealed(t *testing.T, home string, db *sqlite.DB, clk clock.Clock) (*audit.Log, audit.Setup) {
	t.Helper()
	s := audit.NewSealer(home, audit.SealerOptions{Interval: time.Hour, Records: 1000})
	setup, err := s.SetUp(t.Context(), db, home, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	return audit.NewSealed(db, clk, s), setup
}

func mustVerify(t *testing.T, db *sqlite.DB, o audit.Options) audit.Report {
	t.Helper()
	rep, err := audit.VerifyWith(context.Background(), db, o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestSealedLog(t *testing.T) {
	ctx := t.Context()
	home := t.TempDir()
	db, dbPath := openDB(t)
	clk := clock.NewFake(t0)
	fillUnsealed := audit.New(db, clk) // records from before sealing began
	fill(t, fillUnsealed, clk, 5)
	fillUnsealed.Close()

	l, setup := sealed(t, home, db, clk)
	if !setup.New || setup.Key.Fingerprint() != setup.Fingerprint {
		t.Fatalf("setup %+v", setup)
	}
	if _, err := audit.PendingKey(home); err != nil {
		t.Fatalf("the verification key does not wait in the home: %v", err)
	}
	fill(t, l, clk, 10)
	// A person's answer closes the epoch, and the key evolves at once.
	if _, err := l.Append(ctx, audit.Entry{Type: audit.TypeAnswer, Data: "yes", Seal: true}); err != nil {
		t.Fatal(err)
	}
	st, err := audit.ReadSealState(filepath.Join(home, audit.SealFile))
	if err != nil || st.Epoch != 1 {
		t.Fatalf("after an answer the key is at epoch %d (%v), want 1", st.Epoch, err)
	}
	fill(t, l, clk, 3)
	if err := l.Close(); err != nil { // closes the epoch it wrote in
		t.Fatal(err)
	}
	key := setup.Key
	o := audit.Options{Key: &key, SealFile: filepath.Join(home, audit.SealFile)}
	rep := mustVerify(t, db, o)
	if !rep.OK || !rep.SealChecked || rep.Epochs != 2 || rep.KeyEpoch != 2 || rep.SealedThrough != rep.LastSeq {
		t.Fatalf("verify: %+v", rep)
	}
	// Another key does not verify it.
	other, _ := audit.NewVerifyKey()
	if rep := mustVerify(t, db, audit.Options{Key: &other}); rep.OK || rep.FirstBad != 6 {
		t.Fatalf("verified with another key: %+v", rep)
	}
	// The records from before sealing are covered by the seal_start's tag.
	w, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Exec(`UPDATE audit SET data = '{"i":99}' WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, db, o); rep.OK || rep.FirstBad != 2 {
		t.Fatalf("a legacy record was altered unseen: %+v", rep)
	}
}

// A crash between an epoch's marker and its key's evolution: the log
// verifies, and the next writer evolves the key.
func TestSealPendingEvolution(t *testing.T) {
	ctx := t.Context()
	home := t.TempDir()
	db, _ := openDB(t)
	clk := clock.NewFake(t0)
	l, setup := sealed(t, home, db, clk)
	fill(t, l, clk, 3)
	keyPath := filepath.Join(home, audit.SealFile)
	before, _ := os.ReadFile(keyPath)
	if _, err := l.Append(ctx, audit.Entry{Type: audit.TypeAnswer, Data: "no", Seal: true}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// As if the process died after the marker's commit: the old key is back.
	if err := os.WriteFile(keyPath, before, 0o600); err != nil {
		t.Fatal(err)
	}
	key := setup.Key
	o := audit.Options{Key: &key, SealFile: keyPath}
	if rep := mustVerify(t, db, o); !rep.OK {
		t.Fatalf("a pending evolution is a problem: %+v", rep)
	}
	l2 := audit.NewSealed(db, clk, audit.NewSealer(home, audit.SealerOptions{}))
	if _, err := l2.Append(ctx, audit.Entry{Type: audit.TypeAction, Data: 1}); err != nil {
		t.Fatal(err)
	}
	l2.Close()
	if st, _ := audit.ReadSealState(keyPath); st.Epoch < 1 {
		t.Fatalf("the key did not evolve: epoch %d", st.Epoch)
	}
	if rep := mustVerify(t, db, o); !rep.OK {
		t.Fatalf("after recovery: %+v", rep)
	}
}

// Two processes (two Logs, two Sealers) on one database and home seal one
// chain between them.
func TestSealSharedByProcesses(t *testing.T) {
	ctx := t.Context()
	home := t.TempDir()
	db, p := openDB(t)
	db2, err := sqlite.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	clk := clock.NewFake(t0)
	a, setup := sealed(t, home, db, clk)
	b := audit.NewSealed(db2, clk, audit.NewSealer(home, audit.SealerOptions{}))
	for i := range 20 {
		l := a
		if i%3 == 0 {
			l = b
		}
		if _, err := l.Append(ctx, audit.Entry{Type: audit.TypeAction, Data: i, Seal: i%4 == 1}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	a.Close()
	b.Close()
	key := setup.Key
	if rep := mustVerify(t, db, audit.Options{Key: &key, SealFile: filepath.Join(home, audit.SealFile)}); !rep.OK || rep.Epochs < 5 {
		t.Fatalf("shared chain: %+v", rep)
	}
}

// A process with no sealing key refuses to append to a sealed log, and a
// sealed log's key file removed stops appends too (fail closed).
func TestSealedLogRefusesWithoutKey(t *testing.T) {
	ctx := t.Context()
	home := t.TempDir()
	db, _ := openDB(t)
	clk := clock.NewFake(t0)
	l, _ := sealed(t, home, db, clk)
	fill(t, l, clk, 2)
	l.Close()
	plain := audit.New(db, clk)
	defer plain.Close()
	if _, err := plain.Append(ctx, audit.Entry{Type: audit.TypeAction}); !errors.Is(err, audit.ErrSeal) {
		t.Fatalf("an unsealed append to a sealed log: %v", err)
	}
	if err := os.Remove(filepath.Join(home, audit.SealFile)); err != nil {
		t.Fatal(err)
	}
	l2 := audit.NewSealed(db, clk, audit.NewSealer(home, audit.SealerOptions{}))
	defer l2.Close()
	if _, err := l2.Append(ctx, audit.Entry{Type: audit.TypeAction}); !errors.Is(err, audit.ErrSeal) {
		t.Fatalf("an append without the key file: %v", err)
	}
}

func TestParseHeads(t *testing.T) {
	h := audit.Head{Seq: 7, Hash: strings.Repeat("ab", 32), Time: t0}
	in := h.Line() + "\n" +
		`{"event":"audit_head","head":` + h.Line() + "}\n" +
		`{"id":"x","message":` + jsonString(h.Line()) + "}\n" +
		"Nov 25 host overseer-audit[1]: " + h.Line() + "\n" +
		"not a head\n"
	got, err := audit.ParseHeads(strings.NewReader(in))
	if err != nil || len(got) != 4 {
		t.Fatalf("heads %+v, %v", got, err)
	}
	for _, g := range got {
		if g.Seq != 7 || g.Hash != h.Hash || !g.Time.Equal(t0) {
			t.Fatalf("head %+v", g)
		}
	}
}

func jsonString(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// Instances with homes of their own, each with a copy of the sealing key
// taken at setup, share one database: an instance whose copy fell behind
// (the others closed epochs meanwhile) follows the chain forward, and the
// chain verifies with the one verification key. A copy at an epoch whose
// derived key does not seal the tail is refused.
func TestSealSharedByInstances(t *testing.T) {
	ctx := t.Context()
	homeA, homeB := t.TempDir(), t.TempDir()
	db, p := openDB(t)
	db2, err := sqlite.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	clk := clock.NewFake(t0)
	a, setup := sealed(t, homeA, db, clk)
	key, err := os.ReadFile(filepath.Join(homeA, audit.SealFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(homeB, audit.SealFile), key, 0o600); err != nil {
		t.Fatal(err)
	}
	// A alone closes several epochs (every answer closes one).
	for i := range 6 {
		if _, err := a.Append(ctx, audit.Entry{Type: audit.TypeAnswer, Data: i, Seal: true}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	b := audit.NewSealed(db2, clk, audit.NewSealer(homeB, audit.SealerOptions{}))
	for i := range 4 {
		l := []*audit.Log{a, b}[i%2]
		if _, err := l.Append(ctx, audit.Entry{Type: audit.TypeAction, Data: i, Seal: i == 2}); err != nil {
			t.Fatalf("shared append %d: %v", i, err)
		}
	}
	a.Close()
	b.Close()
	k := setup.Key
	if rep := mustVerify(t, db, audit.Options{Key: &k}); !rep.OK || rep.Epochs < 7 {
		t.Fatalf("shared chain: %+v", rep)
	}

	// A key file of another setup (another seed) does not follow the chain.
	homeC := t.TempDir()
	other, _ := openDB(t)
	oc, _ := sealed(t, homeC, other, clk)
	oc.Close()
	c := audit.NewSealed(db, clk, audit.NewSealer(homeC, audit.SealerOptions{}))
	defer c.Close()
	if _, err := c.Append(ctx, audit.Entry{Type: audit.TypeAction}); !errors.Is(err, audit.ErrSeal) {
		t.Fatalf("an append with another setup's key: %v", err)
	}
}

// A lagging copy of the sealing key (an instance of a shared database that
// has not written since others closed epochs) is a problem for a log of
// one home, and not with KeyCopies; a copy ahead of the log is a cut
// either way.
func TestVerifyKeyCopies(t *testing.T) {
	ctx := t.Context()
	home, lagging := t.TempDir(), t.TempDir()
	db, _ := openDB(t)
	clk := clock.NewFake(t0)
	l, setup := sealed(t, home, db, clk)
	b, err := os.ReadFile(filepath.Join(home, audit.SealFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lagging, audit.SealFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := l.Append(ctx, audit.Entry{Type: audit.TypeAnswer, Data: i, Seal: true}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	key := setup.Key
	lag := filepath.Join(lagging, audit.SealFile)
	if rep := mustVerify(t, db, audit.Options{Key: &key, SealFile: lag}); rep.OK {
		t.Fatalf("a lagging key file passed for a log of one home: %+v", rep)
	}
	if rep := mustVerify(t, db, audit.Options{Key: &key, SealFile: lag, KeyCopies: true}); !rep.OK {
		t.Fatalf("a lagging copy with KeyCopies: %+v", rep)
	}
	// Ahead: the current key with the log's last epoch cut off.
	if rep := mustVerify(t, db, audit.Options{Key: &key, SealFile: filepath.Join(home, audit.SealFile), KeyCopies: true}); !rep.OK {
		t.Fatalf("the current key: %+v", rep)
	}
	st, err := audit.ReadSealState(filepath.Join(home, audit.SealFile))
	if err != nil {
		t.Fatal(err)
	}
	ahead := filepath.Join(t.TempDir(), audit.SealFile)
	future := audit.SealState{Epoch: st.Epoch + 2, Key: st.Key.Next().Next(), Fingerprint: st.Fingerprint}
	if err := audit.WriteSealStateForTest(ahead, future); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, db, audit.Options{Key: &key, SealFile: ahead, KeyCopies: true}); rep.OK {
		t.Fatalf("a key ahead of the log passed with KeyCopies: %+v", rep)
	}
}

// Setting up a log that is sealed already writes nothing and takes no write
// lock: a process that opens it (a hook run without a daemon) does not wait
// for another writer, and the log goes on as before.
func TestSetUpSealedLogWritesNothing(t *testing.T) {
	home := t.TempDir()
	db, dbPath := openDB(t)
	clk := clock.NewFake(t0)
	l, first := sealed(t, home, db, clk)
	fill(t, l, clk, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite", "file:"+dbPath+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	held, err := other.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	s := audit.NewSealer(home, audit.SealerOptions{Interval: time.Hour, Records: 1000})
	setup, err := s.SetUp(ctx, db, home, clk.Now)
	if err != nil {
		t.Fatalf("setting up a sealed log while another process writes: %v", err)
	}
	if setup.New {
		t.Fatal("a sealed log was set up anew")
	}
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	l = audit.NewSealed(db, clk, s)
	fill(t, l, clk, 2)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, db, audit.Options{Key: &first.Key, SealFile: filepath.Join(home, audit.SealFile)}); !rep.OK || !rep.SealChecked || rep.SealedThrough != rep.LastSeq {
		t.Fatalf("verify after a second setup: %+v", rep)
	}
}
