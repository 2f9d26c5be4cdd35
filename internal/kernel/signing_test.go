package kernel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// Every kernel signs with the console's key, so hooks and the CLI may
// create it at once: each gets the one key, none reads it half written,
// and no temporary file is left.
func TestLoadConsoleKeyConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, kernel.ConsoleKeyName)
	const n = 32
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = kernel.LoadConsoleKey(path)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("two keys: %x and %x", keys[0], keys[i])
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("the directory holds %v (%v), want the key alone", ents, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key's mode: %v %v", fi, err)
	}
}

// A rule written by a version before records were signed (its record
// sealed, unsigned): in the home's own SQLite file, which whoever could
// forge it could also read the key beside, it keeps its force after an
// upgrade and is no finding. On a shared database it lets nothing run
// unasked, and is a finding; for audit verify with the verification key,
// which proves the record's seal, it is no finding.
func TestUnsignedRecordProvedBySeal(t *testing.T) {
	t.Run("home database", func(t *testing.T) {
		k := open(t, nil, "")
		fs := unsignedRule(t, k, false)
		if has(fs, "old-allow") {
			t.Fatalf("an older version's rule in the home's database is a finding: %v", fs)
		}
	})
	t.Run("shared database", func(t *testing.T) {
		ks, _, _ := openShared(t, 1, 20*time.Millisecond)
		k := ks[0]
		fs := unsignedRule(t, k, true)
		if !has(fs, "old-allow") {
			t.Fatalf("without a proved seal: findings %v", fs)
		}
		recs, err := k.Raw().QueryAudit(context.Background(), store.AuditQuery{Desc: true, Limit: 1})
		if err != nil || len(recs) != 1 {
			t.Fatal(err)
		}
		fs, err = kernel.FindingsOf(context.Background(), k.Home, k.Raw(), time.Now(), true, recs[0].Seq)
		if err != nil || has(fs, "old-allow") {
			t.Fatalf("with its seal proved: findings %v, %v", fs, err)
		}
	})
}

func has(fs []kernel.Finding, id string) bool {
	for _, f := range fs {
		if f.ID == id {
			return true
		}
	}
	return false
}

// unsignedRule adds an allow rule as a version before signing did and
// checks whether it is used (want: not on a shared database); it returns
// the findings of audit verify without a proved seal.
func unsignedRule(t *testing.T, k *kernel.Kernel, shared bool) []kernel.Finding {
	t.Helper()
	ctx := context.Background()
	r := policy.Rule{Name: "old-allow", Tool: []string{"Write"}, When: `args.file_path == "/srv/x"`, Level: action.Auto}
	raw, _ := json.Marshal(r)
	ur := &store.UserRule{ID: r.Name, Rule: raw, Origin: "human", CreatedBy: "ann", CreatedAt: time.Now().UTC().Round(0)}
	pc := kernel.PolicyChange{Origin: "human", Op: "add", RuleID: r.Name, Rule: &r, Who: "ann", After: r.Level, Reason: "rule added by ann"}
	if _, err := k.Audit.Append(ctx, audit.Entry{Type: audit.TypePolicyChange, Seal: true,
		Effect: &store.PutUserRuleEffect{Rule: ur, Describe: func(stored *store.UserRule) (json.RawMessage, error) {
			c := pc
			cp := *stored
			c.Stored = &cp
			return json.Marshal(c) // as a version before signing wrote it
		}}}); err != nil {
		t.Fatal(err)
	}
	if err := k.Engine.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	w := write("/srv/x")
	w.Cwd = "/proj"
	v := k.Evaluate(ctx, w)
	if shared && v.Level < action.Confirm {
		t.Fatalf("an unsigned allow rule is used on a shared database: %s", v.Summary())
	}
	if !shared && v.Level != action.Auto {
		t.Fatalf("an older version's allow rule in the home's database is not used after the upgrade: %s", v.Summary())
	}
	fs, err := kernel.FindingsOf(ctx, k.Home, k.Raw(), time.Now(), true, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
