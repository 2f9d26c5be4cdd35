package kernel_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/undo"
	"github.com/overseer-dev/overseer/internal/usage"
)

// A secret a session read through one instance is known to the others:
// its value, sent through a second instance to a known destination (where
// the flow rule does not apply), is found as it is on the first. The
// session's memory holds the read's values as fingerprints keyed with the
// egress key: an instance with a key of its own found nothing (the send
// ran at notify), so such an instance does not start.
func TestSharedEgressReadAcrossInstances(t *testing.T) {
	ctx := context.Background()
	ks, _, _ := openShared(t, 2, time.Minute)
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	other := filepath.Join(root, "ops")
	const value = "qT7vK2pX9mR4wL8nB3cF6hJ1dS5gA0zE"
	for dir, files := range map[string]map[string]string{proj: {"README.md": "# readme\n"}, other: {".env": "DEPLOY_TOKEN=" + value + "\n"}} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, c := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := &action.Action{Tool: "Read", Agent: "claude-code", Session: "eg", Cwd: proj,
		Args: map[string]any{"file_path": filepath.Join(other, ".env")}}
	send := func(k *kernel.Kernel, session string) action.Verdict {
		a := &action.Action{Tool: "WebFetch", Agent: "claude-code", Session: session, Cwd: proj,
			Args: map[string]any{"url": "https://github.com/search?q=" + value, "prompt": "summarise"}}
		sub, err := k.Submit(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		return sub.Verdict
	}
	// Without the read, the value is nothing to either instance.
	if v := send(ks[1], "fresh"); !v.Allowed() {
		t.Fatalf("a send without a secret read: %s %+v", v.Level, v.Reasons)
	}
	sub, err := ks[0].Submit(ctx, read)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Verdict.Level != action.Approve && !sub.Verdict.Allowed() {
		t.Fatalf("the read: %s", sub.Verdict.Level)
	}
	for i, k := range ks {
		v := send(k, "eg")
		if v.Allowed() {
			t.Fatalf("instance %d let the session send the secret it read on instance 0: %s %+v", i, v.Level, v.Reasons)
		}
	}
	// An instance with an egress key of its own (not copied from the
	// others) is refused; with the fleet's key it starts.
	home := t.TempDir()
	for _, name := range []string{kernel.PolicyName, audit.SealFile, kernel.ConsoleKeyName} {
		b, err := os.ReadFile(filepath.Join(ks[0].Home, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if k, err := kernel.Open(ctx, kernel.Config{Home: home}); !errors.Is(err, kernel.ErrEgressKey) {
		if err == nil {
			k.Close()
		}
		t.Fatalf("an instance with an egress key of its own: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(ks[0].Home, kernel.EgressKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, kernel.EgressKeyFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := kernel.Open(ctx, kernel.Config{Home: home})
	if err != nil {
		t.Fatalf("an instance with the fleet's egress key: %v", err)
	}
	defer k.Close()
	if v := send(k, "eg"); v.Allowed() {
		t.Fatalf("the third instance let the session send the secret: %s %+v", v.Level, v.Reasons)
	}
}

// Undo restores what its own instance kept. The index of kept content is
// the fleet's, the content and the files are the instance's: an undo
// through another instance removed, there, the file the action had
// created (another machine's file of that name), and marked the action
// undone, so that the instance that kept it could no longer undo it. It is
// refused now, with nothing changed, and the keeping instance undoes it.
func TestSharedUndoOnTheKeepingInstance(t *testing.T) {
	ctx := context.Background()
	ks, _, _ := openShared(t, 2, time.Minute)
	dir := t.TempDir()
	old, made := filepath.Join(dir, "old.txt"), filepath.Join(dir, "made.txt")
	if err := os.WriteFile(old, []byte("before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &action.Action{ID: "act_undo_fleet", Tool: "Bash", Agent: "claude-code", Session: "u", Cwd: dir,
		Facts: action.Facts{Paths: []action.PathFact{{Path: old, Intent: action.PathWrite}, {Path: made, Intent: action.PathWrite}}}}
	if err := ks[0].Snapshot(ctx, a); err != nil {
		t.Fatal(err)
	}
	// The action runs: it changes one file and creates the other.
	if err := os.WriteFile(old, []byte("after\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(made, []byte("new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ks[1].UndoAction(ctx, a.ID, "ann"); !errors.Is(err, undo.ErrElsewhere) {
		t.Fatalf("undo through the other instance: %v", err)
	}
	for p, want := range map[string]string{old: "after\n", made: "new\n"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Fatalf("the other instance's undo changed %s: %q %v", p, b, err)
		}
	}
	if _, err := ks[0].UndoAction(ctx, a.ID, "ann"); err != nil {
		t.Fatalf("undo through the instance that kept it: %v", err)
	}
	if b, err := os.ReadFile(old); err != nil || string(b) != "before\n" {
		t.Fatalf("after the undo: %q %v", b, err)
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Fatalf("the file the action made is still there: %v", err)
	}
}

// A session with a very long name (an agent names its own) has its spend
// counted on every instance, and does not stop the others' from being
// written: the spend of all sessions is written behind in one transaction,
// and PostgreSQL refused the long name's key (an index entry holds at most
// 2704 bytes), so no spend of that instance was written at all — the
// other instances' budget caps never saw it.
func TestSharedSpendLongSession(t *testing.T) {
	ctx := context.Background()
	ks, _, _ := openShared(t, 2, time.Second)
	a, b := ks[0], ks[1]
	if _, err := a.PutBudgetCap(ctx, usage.BudgetCap{ID: "day", Scope: usage.ScopeGlobal, MaxCostUSD: 10, Period: usage.Daily,
		Action: usage.Stop, Enabled: true}, "ann"); err != nil {
		t.Fatal(err)
	}
	var long strings.Builder
	h := sha256.Sum256([]byte("session"))
	for long.Len() < 6000 {
		long.WriteString(hex.EncodeToString(h[:]))
		h = sha256.Sum256(h[:])
	}
	a.RecordUse(ctx, kernel.Use{Agent: "codex", Session: long.String(), Model: "m", CostUSD: 0.25})
	a.RecordUse(ctx, kernel.Use{Agent: "claude", Session: "s2", Model: "m", CostUSD: 0.5})
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.Evaluate(ctx, read("nobody")) // reads the caps and the spend
		var spent float64
		for _, st := range b.Budgets() {
			spent = st.Spent
		}
		if spent > 0.749 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other instance sees $%.2f of a's $0.75", spent)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
