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
// sealed, unsigned) lets nothing run unasked, and is a finding; for audit
// verify with the verification key, which proves the record's seal, it is
// no finding.
func TestUnsignedRecordProvedBySeal(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
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
	if v := k.Evaluate(ctx, w); v.Level < action.Confirm {
		t.Fatalf("an unsigned allow rule is used: %s", v.Summary())
	}
	has := func(fs []kernel.Finding) bool {
		for _, f := range fs {
			if f.ID == r.Name {
				return true
			}
		}
		return false
	}
	fs, err := kernel.FindingsOf(ctx, k.Home, k.Raw(), time.Now(), true, 0)
	if err != nil || !has(fs) {
		t.Fatalf("without a proved seal: findings %v, %v", fs, err)
	}
	recs, err := k.Raw().QueryAudit(ctx, store.AuditQuery{Desc: true, Limit: 1})
	if err != nil || len(recs) != 1 {
		t.Fatal(err)
	}
	fs, err = kernel.FindingsOf(ctx, k.Home, k.Raw(), time.Now(), true, recs[0].Seq)
	if err != nil || has(fs) {
		t.Fatalf("with its seal proved: findings %v, %v", fs, err)
	}
}
