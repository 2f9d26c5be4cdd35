package perception

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	b, clk, db := newBus(t)
	r := Refusal{Session: "claude-code/s1", ArgsHash: "h1", Tool: "Bash", ApprovalID: "apr_1", Who: "ann", Channel: "web",
		Reason: "not there", Decision: "deny"}
	if _, ok, err := b.Refusal(ctx, r.Session, r.ArgsHash); ok || err != nil {
		t.Fatalf("before: %v %v", ok, err)
	}
	// A repeat counted before the refusal's own bookkeeping ran stores it.
	if got, err := b.RecordRepeat(ctx, r); err != nil || got.Repeats != 1 {
		t.Fatalf("early repeat: %+v %v", got, err)
	}
	if err := b.RecordRefusal(ctx, r); err != nil {
		t.Fatal(err)
	}
	got, ok, err := b.Refusal(ctx, r.Session, r.ArgsHash)
	if !ok || err != nil || got.Reason != "not there" || got.Repeats != 1 {
		t.Fatalf("after: %+v %v %v", got, ok, err)
	}
	if got, _ := b.RecordRepeat(ctx, r); got.Repeats != 2 {
		t.Fatalf("repeats %d", got.Repeats)
	}
	// Another process sharing the store sees it.
	other := New(db, clk)
	if got, ok, _ := other.Refusal(ctx, r.Session, r.ArgsHash); !ok || got.Repeats != 2 {
		t.Fatalf("another bus: %+v %v", got, ok)
	}
	// Other sessions and other calls are not refused.
	for _, k := range [][2]string{{"claude-code/s2", "h1"}, {"claude-code/s1", "h2"}} {
		if _, ok, _ := b.Refusal(ctx, k[0], k[1]); ok {
			t.Errorf("%v refused", k)
		}
	}
	// A new refusal of the same call starts counting again.
	r2 := r
	r2.ApprovalID = "apr_2"
	_ = b.RecordRefusal(ctx, r2)
	if got, _, _ := b.Refusal(ctx, r.Session, r.ArgsHash); got.Repeats != 0 || got.ApprovalID != "apr_2" {
		t.Fatalf("new refusal: %+v", got)
	}
	// Remembered for a day.
	clk.Advance(RefusalMaxAge + time.Minute)
	if _, ok, _ := b.Refusal(ctx, r.Session, r.ArgsHash); ok {
		t.Fatal("a refusal older than a day is remembered")
	}
}

func TestCreatedPaths(t *testing.T) {
	ctx := context.Background()
	b, _, _ := newBus(t)
	if err := b.RecordCreated(ctx, "claude-code/s1", []string{"/tmp/x", "/tmp/y/z"}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Created(ctx, "claude-code/s1", []string{"/tmp/x", "/tmp/x/a/b", "/tmp/xy", "/tmp/y", "/tmp/y/z/w", "/etc"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, true, false, false, true, false}; !slices.Equal(got, want) {
		t.Fatalf("created %v, want %v", got, want)
	}
	if got, _ := b.Created(ctx, "claude-code/s2", []string{"/tmp/x"}); got[0] {
		t.Fatal("another session's scratch")
	}
}
