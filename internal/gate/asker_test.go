package gate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/proc"
	"github.com/overseer-dev/overseer/internal/store"
)

// fakeProcs stands in for the operating system's process table.
type fakeProcs struct {
	mu   sync.Mutex
	gone map[int]bool
}

func (f *fakeProcs) check(id proc.Identity) proc.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id.Host != "here" {
		return proc.Unknown
	}
	if f.gone[id.PID] {
		return proc.Gone
	}
	return proc.Running
}

func (f *fakeProcs) kill(pid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone[pid] = true
}

// TestWithdrawGone: each way an asker can be gone withdraws its request
// (status withdrawn, not a refusal), and only that one.
func TestWithdrawGone(t *testing.T) {
	procs := &fakeProcs{gone: map[int]bool{}}
	g, clk, _ := newGate(t, Config{Timeout: time.Hour, Poll: longPoll, AskerGrace: 15 * time.Second, Process: procs.check})
	ctx := context.Background()
	req := func(target string, asker *store.Asker) *store.Approval {
		t.Helper()
		a, v := rmAction(target)
		ap, err := g.RequestBy(ctx, a, v, asker)
		if err != nil {
			t.Fatal(err)
		}
		return ap
	}
	noAsker := req("plain", nil)
	killed := req("killed", &store.Asker{Kind: "hook", PID: 101, Start: "7", Host: "here"})
	elsewhere := req("elsewhere", &store.Asker{Kind: "hook", PID: 102, Start: "7", Host: "other-host"})
	until := req("until", &store.Asker{Kind: "hook", PID: 103, Host: "here", Until: t0.Add(time.Minute)})
	polling := req("polling", &store.Asker{Kind: "hook", PID: 104, Host: "here", Hold: true})
	idle := req("idle", &store.Asker{Kind: "api", Hold: true})
	mcp := req("mcp", &store.Asker{Kind: "mcp", PID: 105, Host: "here"})

	status := func(ap *store.Approval) store.ApprovalStatus {
		t.Helper()
		got, err := g.Get(ctx, ap.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	sweep := func(want int) {
		t.Helper()
		n, err := g.WithdrawGone(ctx)
		if err != nil || n != want {
			t.Fatalf("WithdrawGone = %d, %v; want %d", n, err, want)
		}
	}

	// Everyone is alive: nothing happens.
	sweep(0)

	// A long-poll holds "polling" the whole time.
	pctx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	res := goWait(pctx, g, polling.ID)
	awaitTimers(t, clk, 1)

	// The hook's process is killed: its request goes, the one from another
	// host (whose pid means nothing here) stays.
	procs.kill(101)
	procs.kill(102)
	sweep(1)
	if status(killed) != store.StatusWithdrawn || status(elsewhere) != store.StatusPending {
		t.Fatalf("killed %s, elsewhere %s", status(killed), status(elsewhere))
	}
	got, _ := g.Get(ctx, killed.ID)
	if a := got.Answer; a == nil || a.Decision != DecisionWithdraw || a.Who != WithdrawnActor ||
		!strings.Contains(a.Reason, "process 101") || Allowed(got) {
		t.Fatalf("answer %+v", got.Answer)
	}

	// Past the grace, a holding asker that polls keeps its request; one
	// nobody polls for is given up.
	clk.Advance(20 * time.Second)
	sweep(1)
	if status(idle) != store.StatusWithdrawn || status(polling) != store.StatusPending {
		t.Fatalf("idle %s, polling %s", status(idle), status(polling))
	}

	// The hook's wait ran out.
	clk.Advance(time.Minute)
	sweep(1)
	if status(until) != store.StatusWithdrawn {
		t.Fatalf("until %s", status(until))
	}

	// The poll ends without an answer: the grace starts then.
	stopPolling()
	if r := recv(t, res); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("wait: %+v", r)
	}
	clk.Advance(10 * time.Second)
	sweep(0)
	clk.Advance(6 * time.Second)
	sweep(1)
	if status(polling) != store.StatusWithdrawn {
		t.Fatalf("polling %s", status(polling))
	}

	// The MCP client exits.
	procs.kill(105)
	sweep(1)
	if status(mcp) != store.StatusWithdrawn || status(noAsker) != store.StatusPending || status(elsewhere) != store.StatusPending {
		t.Fatalf("mcp %s, plain %s, elsewhere %s", status(mcp), status(noAsker), status(elsewhere))
	}
	// A late answer after a withdrawal is recorded only.
	if _, applied, err := g.Answer(ctx, killed.ID, answer(DecisionApprove)); err != nil || applied {
		t.Fatalf("late answer: %v %v", applied, err)
	}
}

// TestWithdrawGoneAfterRestart: a new gate (a restarted daemon) withdraws at
// once what cannot be waited for any more, and gives holding askers the
// grace to come back.
func TestWithdrawGoneAfterRestart(t *testing.T) {
	procs := &fakeProcs{gone: map[int]bool{}}
	g, clk, db := newGate(t, Config{Timeout: time.Hour, Poll: longPoll, Process: procs.check})
	ctx := context.Background()
	var ids []string
	for i, asker := range []*store.Asker{
		{Kind: "hook", PID: 201, Host: "here", Hold: true},                             // killed while the daemon was down
		{Kind: "hook", PID: 202, Host: "here", Hold: true, Until: t0.Add(time.Minute)}, // its wait ran out
		{Kind: "hook", PID: 203, Host: "here", Hold: true},                             // alive: it will poll again
	} {
		a, v := rmAction(string(rune('a' + i)))
		ap, err := g.RequestBy(ctx, a, v, asker)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ap.ID)
	}
	procs.kill(201)
	clk.Advance(10 * time.Minute)
	g2 := New(db, clk, Config{Timeout: time.Hour, Poll: longPoll, Process: procs.check})
	if n, err := g2.WithdrawGone(ctx); err != nil || n != 2 {
		t.Fatalf("at start: %d %v", n, err)
	}
	ap, _ := g2.Get(ctx, ids[2])
	if ap.Status != store.StatusPending {
		t.Fatalf("the live asker's request: %s", ap.Status)
	}
	clk.Advance(DefaultAskerGrace)
	if n, _ := g2.WithdrawGone(ctx); n != 1 {
		t.Fatalf("after the grace: %d", n)
	}
}

func TestWithdrawAsked(t *testing.T) {
	g, _, _ := newGate(t, Config{Timeout: time.Hour, Poll: longPoll})
	ctx := context.Background()
	a, v := rmAction("x")
	ap, err := g.RequestBy(ctx, a, v, &store.Asker{Kind: "api", KeyHash: AskerKeyHash("s3cret")})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "wrong"} {
		if _, _, err := g.WithdrawAsked(ctx, ap.ID, key, "gave up"); !errors.Is(err, ErrNotAsker) {
			t.Fatalf("key %q: %v", key, err)
		}
	}
	got, applied, err := g.WithdrawAsked(ctx, ap.ID, "s3cret", "gave up")
	if err != nil || !applied || got.Status != store.StatusWithdrawn || got.Answer.Reason != "gave up" {
		t.Fatalf("%v %v %+v", err, applied, got)
	}
	plain, _ := g.Request(ctx, a, v)
	if _, _, err := g.WithdrawAsked(ctx, plain.ID, "s3cret", "x"); !errors.Is(err, ErrNotAsker) {
		t.Fatalf("a request without a key: %v", err)
	}
}

// TestWithdrawGoneShared: with a database shared by several daemons, a
// request whose asker holds a long-poll is not withdrawn for want of a
// waiter in this gate (the asker may be polling another daemon); its wait
// running out still withdraws it.
func TestWithdrawGoneShared(t *testing.T) {
	procs := &fakeProcs{gone: map[int]bool{}}
	g, clk, _ := newGate(t, Config{Timeout: time.Hour, Poll: longPoll, AskerGrace: 15 * time.Second, Process: procs.check, Shared: true})
	ctx := context.Background()
	a, v := rmAction("held")
	held, err := g.RequestBy(ctx, a, v, &store.Asker{Kind: "hook", Hold: true, Until: t0.Add(10 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if n, err := g.WithdrawGone(ctx); err != nil || n != 0 {
		t.Fatalf("WithdrawGone = %d, %v; want 0 (the asker may poll another daemon)", n, err)
	}
	clk.Advance(10 * time.Minute)
	if n, err := g.WithdrawGone(ctx); err != nil || n != 1 {
		t.Fatalf("after the asker's wait ran out: %d, %v; want 1", n, err)
	}
	if ap, _ := g.Get(ctx, held.ID); ap.Status != store.StatusWithdrawn {
		t.Fatalf("status %s", ap.Status)
	}
}
