package audit_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

var t0 = time.Date(2025, 6, 1, 8, 30, 0, 987654321, time.UTC)

// openDB opens a real SQLite store in a temporary directory.
func openDB(t testing.TB) (*sqlite.DB, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "audit.db")
	db, err := sqlite.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, p
}

// newLog opens a store and a Log on it with a fake clock.
func newLog(t testing.TB) (*audit.Log, *sqlite.DB, string, *clock.Fake) {
	t.Helper()
	db, p := openDB(t)
	clk := clock.NewFake(t0)
	l := audit.New(db, clk)
	t.Cleanup(func() { l.Close() })
	return l, db, p, clk
}

// fill appends n records with varied fields, one at a time, advancing the
// clock between them.
func fill(t testing.TB, l *audit.Log, clk *clock.Fake, n int) {
	t.Helper()
	types := []string{audit.TypeAction, audit.TypeVerdict, audit.TypeApprovalRequest, audit.TypeAnswer,
		audit.TypeResult, audit.TypePolicyChange, audit.TypeError}
	for i := range n {
		e := audit.Entry{
			Type:     types[i%len(types)],
			ActionID: "act-" + string(rune('a'+i%5)),
			Agent:    []string{"claude-code", "codex", ""}[i%3],
			Session:  "s" + string(rune('0'+i%2)),
			Tool:     []string{"Bash", "Write", "mcp__db__query"}[i%3],
			Data:     map[string]any{"i": i, "note": "<b>&co</b> 中文"},
		}
		if _, err := l.Append(t.Context(), e); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		clk.Advance(time.Millisecond + time.Nanosecond)
	}
}

// waitQueued waits until n appends wait for the Log's writer.
func waitQueued(t testing.TB, l *audit.Log, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for audit.QueueLen(l) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d appends queued", audit.QueueLen(l), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// templateChain builds a closed database file holding a chain of n records.
func templateChain(t testing.TB, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "template.db")
	db, err := sqlite.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	l := audit.New(db, clk)
	fill(t, l, clk, n)
	l.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// copyDB copies the database file at src (and its WAL, if any) into a new
// temporary directory and opens the copy.
func copyDB(t testing.TB, src string) (*sqlite.DB, string) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "audit.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + suffix)
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sqlite.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dst
}
