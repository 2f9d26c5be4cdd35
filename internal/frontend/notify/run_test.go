package notify

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/kernel"
)

const runPolicy = `version: 1
extends: builtin
rules:
  - name: test-deploy
    tool: [deploy]
    level: approve
  - name: test-ask
    tool: [ask]
    level: confirm
`

func TestRunAnnouncesEachRequestOnce(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, kernel.PolicyName), []byte(runPolicy), 0o600)
	clk := clock.NewFake(t0)
	ctx := context.Background()
	k, err := kernel.Open(ctx, kernel.Config{Home: home, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()

	r := newReceiver(t)
	cfg, err := Parse([]byte("levels: [approve]\nchannels:\n  - type: webhook\n    url: " + r.URL + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(cfg, Options{Linker: &fixedLinker{}, Clock: clk, Poll: time.Second, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- n.Run(rctx, k.Gate.Subscribe(rctx), k.Gate.Pending) }()

	approvalOf := func(h hit) string {
		var p struct {
			ApprovalID string `json:"approval_id"`
		}
		json.Unmarshal(h.Body, &p)
		return p.ApprovalID
	}
	submit := func(k *kernel.Kernel, tool string) string {
		sub, err := k.Submit(ctx, &action.Action{Tool: tool, Args: map[string]any{"x": tool}})
		if err != nil || sub.Approval == nil {
			t.Fatalf("submit %s: %v", tool, err)
		}
		return sub.Approval.ID
	}
	poll := func(times int) {
		for i := 0; i < times; i++ {
			time.Sleep(20 * time.Millisecond)
			clk.Advance(time.Second)
		}
	}

	// Announced at once through the gate's event, and only once however
	// often the queue is re-read.
	id := submit(k, "deploy")
	if got := approvalOf(wait(t, r.got)); got != id {
		t.Fatalf("announced %s, want %s", got, id)
	}
	poll(5)
	if r.count() != 1 {
		t.Fatalf("%d messages for one request", r.count())
	}

	// A confirm-level request is not in the configured levels.
	submit(k, "ask")
	poll(3)
	if r.count() != 1 {
		t.Fatalf("a confirm request was announced")
	}

	// A request opened by another process is found by polling.
	k2, err := kernel.Open(ctx, kernel.Config{Home: home, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	id2 := submit(k2, "deploy")
	for r.count() < 2 {
		poll(1)
		select {
		case h := <-r.got:
			if got := approvalOf(h); got != id2 {
				t.Fatalf("announced %s, want %s", got, id2)
			}
		case <-time.After(50 * time.Millisecond):
		}
	}

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestMessageText(t *testing.T) {
	m := MessageOf(testApproval())
	m.Links = Links{Approve: "A", Deny: "D", Open: "O", Expires: t0.Add(time.Minute)}
	txt := m.Text()
	for _, want := range []string{"Bash wants to run (approve) — agent claude-code, session s-42", "rm -rf build", "  in /home/ann/shop\n",
		"Why: approve (rule builtin-delete)", "Preview: 2 files would be removed", "  build/a.o",
		"Approve: A\nDeny:    D\n", "Console: O", "Each link works once and expires"} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q:\n%s", want, txt)
		}
	}
}

// With a Claim, a request is announced only when the claim is this
// notifier's; a claim that fails is tried again at the next re-read of the
// queue (the request is not lost), and a claim another process holds is
// not announced here.
func TestRunClaims(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, kernel.PolicyName), []byte(runPolicy), 0o600)
	clk := clock.NewFake(t0)
	ctx := context.Background()
	k, err := kernel.Open(ctx, kernel.Config{Home: home, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	r := newReceiver(t)
	cfg, err := Parse([]byte("levels: [approve]\nchannels:\n  - type: webhook\n    url: " + r.URL + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu         sync.Mutex
		asked      = map[string]int{}
		othersHold bool
	)
	claim := func(_ context.Context, id string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		asked[id]++
		switch {
		case othersHold:
			return false, nil
		case asked[id] == 1:
			return false, errors.New("the database is away")
		}
		return true, nil
	}
	n, err := New(cfg, Options{Linker: &fixedLinker{}, Clock: clk, Poll: time.Second, Backoff: time.Millisecond, Claim: claim})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go n.Run(rctx, k.Gate.Subscribe(rctx), k.Gate.Pending) //nolint:errcheck // ends with rctx
	submit := func(x string) string {
		sub, err := k.Submit(ctx, &action.Action{Tool: "deploy", Args: map[string]any{"x": x}})
		if err != nil || sub.Approval == nil {
			t.Fatalf("submit: %v", err)
		}
		return sub.Approval.ID
	}
	poll := func() {
		time.Sleep(20 * time.Millisecond)
		clk.Advance(time.Second)
	}
	first := submit("one")
	deadline := time.Now().Add(10 * time.Second)
	for r.count() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the request was not announced after its claim failed once")
		}
		poll()
	}
	mu.Lock()
	othersHold = true
	mu.Unlock()
	second := submit("two")
	for {
		mu.Lock()
		n := asked[second]
		mu.Unlock()
		if n >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second request's claim was never asked")
		}
		poll()
	}
	for range 3 {
		poll()
	}
	mu.Lock()
	defer mu.Unlock()
	if r.count() != 1 || asked[first] != 2 {
		t.Fatalf("%d messages; the first claim asked %d times", r.count(), asked[first])
	}
}
