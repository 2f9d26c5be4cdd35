package web

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Spent answer tokens and used links are forgotten a day after they
// expired, and forgetting them lets nothing through: the token or link is
// refused all the same (as invalid or expired).
func TestPruneSpent(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	used := e.submit("deploy", map[string]any{"target": "used"})
	usedTok, usedExp, err := e.con.AnswerToken(ctx, used, "telegram")
	if err != nil {
		t.Fatal(err)
	}
	if _, applied, err := e.con.AnswerFromChannel(ctx, ChannelAnswer{Token: usedTok, Decision: "deny", Channel: "telegram", Who: "telegram:42"}); err != nil || !applied {
		t.Fatalf("answer: %v %v", err, applied)
	}
	count := func() int {
		n := 0
		for _, ns := range []string{answerNS, linkNS} {
			all, err := e.k.Store.ListState(ctx, ns)
			if err != nil {
				t.Fatal(err)
			}
			n += len(all)
		}
		return n
	}
	if n := count(); n != 2 { // the used token's claims and its mark
		t.Fatalf("%d records before", n)
	}
	// Not yet a day past expiry: kept.
	e.clk.Advance(usedExp.Sub(e.clk.Now()) + SpentGrace - time.Minute)
	if n, err := e.con.PruneSpent(ctx); err != nil || n != 0 {
		t.Fatalf("pruned %d (%v) before the grace ran out", n, err)
	}
	fresh := e.submit("deploy", map[string]any{"target": "fresh"})
	freshTok, _, err := e.con.AnswerToken(ctx, fresh, "telegram") // made now: not spent
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(2 * time.Minute)
	if n, err := e.con.PruneSpent(ctx); err != nil || n != 2 {
		t.Fatalf("pruned %d (%v), want the used token's claims and mark", n, err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d records after, want the fresh token's claims", n)
	}
	// The forgotten token answers nothing; the fresh one still works.
	if _, _, err := e.con.AnswerFromChannel(ctx, ChannelAnswer{Token: usedTok, Decision: "approve", Channel: "telegram", Who: "telegram:42"}); !errors.Is(err, ErrLinkInvalid) {
		t.Fatalf("a forgotten token: %v, want refused as invalid", err)
	}
	if _, applied, err := e.con.AnswerFromChannel(ctx, ChannelAnswer{Token: freshTok, Decision: "approve", Channel: "telegram", Who: "telegram:42"}); err != nil || !applied {
		t.Fatalf("the fresh token: %v %v", err, applied)
	}
}
