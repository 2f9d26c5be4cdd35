package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// A person's approval lets one call through. Its mark of use is a row of
// the database, and a writer of the database that deletes it must not get
// the call through again on a retry (the same agent, session and
// arguments, within the retry window): the use is also in the audit log,
// committed with the mark. The twin: an approval that was never used is
// found by a retry, once.
func TestDeletedUseMarkDoesNotReopenApproval(t *testing.T) {
	ctx := context.Background()
	t.Run("sqlite", func(t *testing.T) {
		k := open(t, nil, "")
		// A second kernel on the same home (a hook, the CLI): it did not
		// use the approval itself.
		k2, err := kernel.Open(ctx, kernel.Config{Home: k.Home})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k2.Close() })
		useMarkDeleted(t, []*kernel.Kernel{k, k2}, func(id string) {
			if err := k.Raw().UpdateState(ctx, gate.ConsumedNS, id, func([]byte) ([]byte, error) { return nil, nil }); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("postgres", func(t *testing.T) {
		ks, _, url := openShared(t, 2, 50*time.Millisecond)
		useMarkDeleted(t, ks, func(id string) {
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			tag, err := c.Exec(ctx, `DELETE FROM state WHERE ns = $1 AND key = $2`, gate.ConsumedNS, id)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("deleting the mark: %v %v", err, tag)
			}
		})
		// The mark and its record deleted together (a gap in the log that
		// audit verify names): the instance that used the approval still
		// knows it did.
		sub, err := ks[0].Submit(ctx, write("/etc/hosts"))
		if err != nil || sub.Approval == nil {
			t.Fatalf("submit: %v %+v", err, sub)
		}
		ap := sub.Approval
		if _, _, err := ks[1].Answer(ctx, ap.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "test"}); err != nil {
			t.Fatal(err)
		}
		if got, err := ks[0].Wait(ctx, ap.ID); err != nil || !gate.Allowed(got) {
			t.Fatalf("wait: %+v %v", got, err)
		}
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DELETE FROM state WHERE ns = $1 AND key = $2`, gate.ConsumedNS, ap.ID); err != nil {
			t.Fatal(err)
		}
		if tag, err := c.Exec(ctx, `DELETE FROM audit WHERE type = 'approval_used' AND action_id = $1`, ap.ActionID); err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("deleting the record: %v %v", err, tag)
		}
		if _, err := ks[0].Gate.TakeApproved(ctx, ap.ArgsHash, gate.CallerOf(&ap.Action)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the instance that used the approval lets it through again: %v", err)
		}
	})
}

func useMarkDeleted(t *testing.T, ks []*kernel.Kernel, deleteMark func(id string)) {
	ctx := context.Background()
	approved := func() *store.Approval {
		t.Helper()
		sub, err := ks[0].Submit(ctx, write("/etc/hosts"))
		if err != nil || sub.Approval == nil {
			t.Fatalf("submit: %v %+v", err, sub)
		}
		if _, applied, err := ks[len(ks)-1].Answer(ctx, sub.Approval.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "test"}); err != nil || !applied {
			t.Fatalf("answer: %v %v", applied, err)
		}
		return sub.Approval
	}
	// Used by its waiter, then its mark deleted.
	ap := approved()
	got, err := ks[0].Wait(ctx, ap.ID)
	if err != nil || !gate.Allowed(got) {
		t.Fatalf("wait: %+v %v", got, err)
	}
	deleteMark(ap.ID)
	for i, k := range ks {
		if _, err := k.Gate.FindApproved(ctx, ap.ArgsHash, gate.CallerOf(&ap.Action)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("instance %d: a retry finds the used approval whose mark was deleted: %v", i, err)
		}
		if _, err := k.Gate.TakeApproved(ctx, ap.ArgsHash, gate.CallerOf(&ap.Action)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("instance %d: a retry rides on the used approval whose mark was deleted: %v", i, err)
		}
		if err := k.Gate.Consume(ctx, ap.ID); !errors.Is(err, gate.ErrConsumed) {
			t.Fatalf("instance %d: the used approval whose mark was deleted is consumed again: %v", i, err)
		}
	}
	// The twin: approved, its waiter gone; a retry takes it once.
	ap2 := approved()
	for i := range 2 {
		k := ks[i%len(ks)]
		took, err := k.Gate.TakeApproved(ctx, ap2.ArgsHash, gate.CallerOf(&ap2.Action))
		switch {
		case i == 0 && (err != nil || took.ID != ap2.ID):
			t.Fatalf("a retry does not find the unused approval: %+v %v", took, err)
		case i == 1 && !errors.Is(err, store.ErrNotFound):
			t.Fatalf("the approval let a second call through: %+v %v", took, err)
		}
	}
}
