package cli

import (
	"context"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/kernel"
)

// A request's announcement is claimed once; claims older than the cutoff
// are forgotten, the others kept.
func TestAnnounceClaimAndPrune(t *testing.T) {
	ctx := context.Background()
	k, err := kernel.Open(ctx, kernel.Config{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	claim := announceClaim(k)
	for i, want := range []bool{true, false} {
		if mine, err := claim(ctx, "apr_1"); err != nil || mine != want {
			t.Fatalf("claim %d: %v %v", i+1, mine, err)
		}
	}
	if err := k.Store.UpdateState(ctx, AnnouncedNS, "apr_old", func([]byte) ([]byte, error) {
		return []byte(`{"at":1000}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := pruneAnnounced(ctx, k, time.Now().Add(-AnnouncedKeep)); err != nil || n != 1 {
		t.Fatalf("pruned %d (%v)", n, err)
	}
	if mine, _ := claim(ctx, "apr_1"); mine {
		t.Fatal("a recent claim was forgotten")
	}
	if mine, _ := claim(ctx, "apr_old"); !mine {
		t.Fatal("the old claim was kept")
	}
}
