package kernel_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/postgres"
)

// Three instances append to one chain at once while each also answers
// requests (every answer closes a sealing epoch, so the key evolves under
// the others' guessed appends): the chain verifies with the key, every
// action is in it once, and no seq is missing or repeated.
func TestSharedSealUnderContention(t *testing.T) {
	ctx := context.Background()
	ks, setup, url := openShared(t, 3, 20*time.Millisecond)
	const per = 30
	var wg sync.WaitGroup
	for i, k := range ks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range per {
				a := write(filepath.Join("/proj", fmt.Sprint(i), fmt.Sprint(j)+".go"))
				a.Cwd = "/proj"
				if _, err := k.Submit(ctx, a); err != nil {
					t.Errorf("submit on instance %d: %v", i, err)
					return
				}
				if j%5 != 0 {
					continue
				}
				sub, err := k.Submit(ctx, write(fmt.Sprintf("/etc/x%d-%d", i, j)))
				if err != nil || sub.Approval == nil {
					t.Errorf("submit on instance %d: %v", i, err)
					return
				}
				other := ks[(i+1)%len(ks)]
				if _, ok, err := other.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "deny", Who: "p", Channel: "test"}); err != nil || !ok {
					t.Errorf("answer on instance %d: %v %v", (i+1)%len(ks), ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, k := range ks {
		k.Close()
	}
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := setup.Key
	rep, err := audit.VerifyWith(ctx, st, audit.Options{Key: &key})
	if err != nil || !rep.OK {
		t.Fatalf("the shared chain does not verify: %+v %v", rep, err)
	}
	recs, err := st.QueryAudit(ctx, store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	actions := 0
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d has seq %d", i+1, r.Seq)
		}
		if r.Type == audit.TypeAction {
			if seen[r.ActionID] {
				t.Fatalf("action %s recorded twice", r.ActionID)
			}
			seen[r.ActionID] = true
			actions++
		}
	}
	if want := 3 * (per + per/5); actions != want {
		t.Fatalf("%d actions in the chain, want %d", actions, want)
	}
}
