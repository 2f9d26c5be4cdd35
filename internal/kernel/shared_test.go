package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/limits"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/pgtest"
	"github.com/overseer-dev/overseer/internal/store/postgres"
	"github.com/overseer-dev/overseer/internal/usage"
)

// openShared opens n kernels, each with a home of its own, on one fresh
// PostgreSQL database named by their policy files, as a fleet's daemons
// are: the first sets up the audit log's seal, and its key file and its
// console key are copied to the others' homes. poll is how often their gates poll the store.
func openShared(t testing.TB, n int, poll time.Duration) ([]*kernel.Kernel, audit.Setup, string) {
	t.Helper()
	url := pgtest.Database(t)
	pol := []byte("settings:\n  store: '" + url + "'\n")
	var (
		ks    []*kernel.Kernel
		setup audit.Setup
	)
	for i := range n {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, kernel.PolicyName), pol, 0o600); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			// The sealing key, and the console's key that signs approvals.
			if _, err := kernel.LoadConsoleKey(filepath.Join(ks[0].Home, kernel.ConsoleKeyName)); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{audit.SealFile, kernel.ConsoleKeyName, kernel.EgressKeyFile} {
				key, err := os.ReadFile(filepath.Join(ks[0].Home, name))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(home, name), key, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		k, err := kernel.Open(context.Background(), kernel.Config{Home: home, Poll: poll})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { k.Close() })
		if !k.Shared() {
			t.Fatal("the kernel does not use the shared database")
		}
		if i == 0 {
			setup = k.Sealing
		}
		ks = append(ks, k)
	}
	return ks, setup, url
}

// waitCross opens an approval on a, waits for it on c, answers it on b,
// and returns what c's waiter got.
func waitCross(t testing.TB, a, b, c *kernel.Kernel, decision string) *store.Approval {
	t.Helper()
	ctx := context.Background()
	sub, err := a.Submit(ctx, write("/etc/hosts"))
	if err != nil {
		t.Fatal(err)
	}
	if sub.Approval == nil {
		t.Fatalf("no approval opened: %s", sub.Verdict.Level)
	}
	got := make(chan *store.Approval, 1)
	waiting := make(chan struct{})
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		close(waiting)
		ap, err := c.Wait(wctx, sub.Approval.ID)
		if err != nil {
			t.Errorf("wait on the third instance: %v", err)
		}
		got <- ap
	}()
	<-waiting
	if _, applied, err := b.Answer(ctx, sub.Approval.ID, store.Answer{Decision: decision, Who: "ann", Channel: "test"}); err != nil || !applied {
		t.Fatalf("answer on the second instance: applied %v, %v", applied, err)
	}
	return <-got
}

// Three instances on one database: an approval opened by one, answered on
// another, wakes the waiter on the third. Its gate polls only every
// minute and the wait gives up after 20 s (waitCross), so the answer
// reached it through the database's notification.
func TestSharedApprovalWakesOtherInstance(t *testing.T) {
	ks, _, _ := openShared(t, 3, time.Minute)
	ap := waitCross(t, ks[0], ks[1], ks[2], "deny")
	if ap == nil || ap.Status != store.StatusDenied || ap.Answer.Who != "ann" {
		t.Fatalf("the waiter on the third instance got %+v", ap)
	}
}

// The first answer wins whichever instance gives it; the audit chain the
// instances wrote together is one chain that verifies with the one key.
func TestSharedFirstAnswerWinsAndOneChain(t *testing.T) {
	ctx := context.Background()
	ks, setup, url := openShared(t, 3, 20*time.Millisecond)
	const rounds = 5
	for r := range rounds {
		sub, err := ks[r%3].Submit(ctx, write("/etc/x"+string(rune('a'+r))))
		if err != nil || sub.Approval == nil {
			t.Fatalf("submit: %v", err)
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			applied []string
		)
		for i, k := range ks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dec := []string{"approve", "deny", "approve"}[i]
				_, ok, err := k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: dec, Who: "p" + string(rune('0'+i)), Channel: "test"})
				if err != nil {
					t.Errorf("answer on instance %d: %v", i, err)
				}
				if ok {
					mu.Lock()
					applied = append(applied, dec)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(applied) != 1 {
			t.Fatalf("round %d: %d answers applied, want 1", r, len(applied))
		}
		ap, err := ks[(r+1)%3].Gate.Get(ctx, sub.Approval.ID)
		if err != nil || len(ap.Answers) != 3 || ap.Answer == nil || ap.Answer.Decision != applied[0] {
			t.Fatalf("round %d: stored %+v, %v (applied %v)", r, ap, err, applied)
		}
	}
	// Actions from all three at once, then the chain.
	var wg sync.WaitGroup
	for i, k := range ks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				a := write(filepath.Join("/proj", string(rune('a'+i)), string(rune('a'+j))+".go"))
				a.Cwd = "/proj"
				if _, err := k.Submit(ctx, a); err != nil {
					t.Errorf("submit on instance %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, k := range ks {
		k.Close() // each closes its sealing epoch
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
	if rep.Records < 3*20*2+rounds*(2+1+3) {
		t.Fatalf("the chain has %d records", rep.Records)
	}
}

// A rule added on one instance is in force on the others at once: the
// change is announced, and they reload their user layer.
func TestSharedUserLayerReloads(t *testing.T) {
	ctx := context.Background()
	ks, _, _ := openShared(t, 3, time.Minute)
	before := ks[2].Evaluate(ctx, write("/etc/motd"))
	if before.Level == action.Block {
		t.Fatalf("already blocked: %+v", before)
	}
	r := policy.Rule{Name: "no-writes", Level: action.Block, Tool: []string{"Write"}}
	if _, err := ks[1].AddUserRule(ctx, r, "ann", nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, k := range []*kernel.Kernel{ks[0], ks[2]} {
		for len(k.Engine.UserRules()) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("another instance did not reload its user layer")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if v := k.Evaluate(ctx, write("/etc/motd")); v.Level != action.Block {
			t.Fatalf("after the reload: %s", v.Level)
		}
	}
}

// BenchmarkSharedWake measures an approval's round across three instances
// on one database: opened on one, answered on another, the waiter on the
// third woken (by the notification: its poll is a minute). wake-ms is the
// time from the answer's call on the second instance to the waiter's
// return on the third (the goal: under 100 ms).
func BenchmarkSharedWake(b *testing.B) {
	ks, _, _ := openShared(b, 3, time.Minute)
	ctx := context.Background()
	var (
		wake time.Duration
		n    int
	)
	for b.Loop() {
		n++
		sub, err := ks[0].Submit(ctx, write(fmt.Sprintf("/etc/bench-%d", n)))
		if err != nil || sub.Approval == nil {
			b.Fatal(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			if _, err := ks[2].Wait(ctx, sub.Approval.ID); err != nil {
				b.Error(err)
			}
			got <- time.Now()
		}()
		time.Sleep(time.Millisecond) // let the waiter read the pending approval first
		asked := time.Now()
		if _, _, err := ks[1].Answer(ctx, sub.Approval.ID, store.Answer{Decision: "deny", Who: "ann", Channel: "bench"}); err != nil {
			b.Fatal(err)
		}
		wake += (<-got).Sub(asked)
	}
	b.ReportMetric(float64(wake.Microseconds())/1000/float64(b.N), "wake-ms")
}

// $OVERSEER_DATABASE_URL selects the database over the policy, and is not
// passed on to the processes the kernel's process starts (it may hold the
// database's password).
func TestDatabaseURLFromEnvironment(t *testing.T) {
	if os.Getenv("OVERSEER_TEST_CHILD") == "1" {
		// In the child: the kernel opens the database the variable names,
		// and the variable is gone from the environment.
		k, err := kernel.Open(context.Background(), kernel.Config{Home: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer k.Close()
		if !k.Shared() {
			t.Fatal("the kernel did not open the database $" + kernel.DatabaseURLEnv + " names")
		}
		out, err := exec.Command("sh", "-c", "echo -n \"$"+kernel.DatabaseURLEnv+"\"").Output()
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 0 {
			t.Fatalf("a process started by the kernel's process inherited the URL %q", out)
		}
		return
	}
	t.Setenv(kernel.DatabaseURLEnv, pgtest.Database(t))
	cmd := exec.Command(os.Args[0], "-test.run", "^TestDatabaseURLFromEnvironment$", "-test.count=1")
	cmd.Env = append(os.Environ(), "OVERSEER_TEST_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func TestDescribeStore(t *testing.T) {
	pol := func(store string) *policy.Policy { p := *policy.Builtin(); p.Settings.Store = store; return &p } // a copy: Builtin is shared
	for _, tc := range []struct{ store, want string }{
		{"", "/h/overseer.db (SQLite)"},
		{"sqlite", "/h/overseer.db (SQLite)"},
		{"postgres://ovs@db.internal:5433/overseer?sslmode=verify-full", "PostgreSQL ovs@db.internal:5433/overseer (shared)"},
	} {
		if got := kernel.DescribeStore("/h", pol(tc.store)); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.store, got, tc.want)
		}
	}
	t.Setenv(kernel.DatabaseURLEnv, "")
	if got := kernel.DescribeStore("/h", pol("postgres://ovs:secret@db/overseer")); strings.Contains(got, "secret") {
		t.Errorf("the description shows the password: %q", got)
	}
}

// sharedLimit puts a rate limit on ks[0] and waits until every instance
// has it in force.
func sharedLimit(t *testing.T, ks []*kernel.Kernel, l usage.RateLimit) {
	t.Helper()
	if _, err := ks[0].PutRateLimit(context.Background(), l, "ann"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range ks {
		for len(k.RateLimits()) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("an instance does not load the rate limit")
			}
			k.Evaluate(context.Background(), read("nobody")) // reloads the controls when due
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Three instances count one agent against one rate limit, from many
// goroutines at once: together they admit exactly the limit (no
// overshoot, nothing refused below it), and after it every instance
// refuses. The calls are not flushed in between: the sharing is the
// leases', not the write-behind's.
func TestSharedRateLimitNoOvershoot(t *testing.T) {
	defer kernel.SetPauseRecheck(0)()
	ctx := context.Background()
	ks, _, _ := openShared(t, 3, time.Second)
	const limitN = 60
	sharedLimit(t, ks, limit("rl", limitN, usage.Block))
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		allowed, denied int
	)
	const perWorker = 15
	start := time.Now()
	for w := range 9 { // 135 calls, 3 workers per instance
		k := ks[w%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				sub, err := k.Submit(ctx, read("codex"))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				switch sub.Verdict.Level {
				case action.Auto:
					allowed++
				case action.Block:
					if !strings.Contains(sub.Verdict.Summary(), "rate limit rl") {
						t.Errorf("refused for another reason: %s", sub.Verdict.Summary())
					}
					denied++
				default:
					t.Errorf("verdict %s", sub.Verdict.Summary())
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	// Never more than the limit. Fewer only when a lease outlived its
	// second with calls unused (a loaded machine): they count until the
	// write-behind gives them back, which is stricter, not looser.
	if allowed > limitN || allowed+denied != 9*perWorker || allowed < limitN && took < 900*time.Millisecond {
		t.Fatalf("the fleet admitted %d calls and refused %d in %v; the limit is %d", allowed, denied, took, limitN)
	}
	if allowed < limitN {
		t.Logf("the fleet admitted %d calls of %d in %v: leases outlived their second", allowed, limitN, took)
	}
	for i, k := range ks {
		if sub, _ := k.Submit(ctx, read("codex")); sub.Verdict.Level != action.Block {
			t.Fatalf("instance %d after the limit: %s", i, sub.Verdict.Summary())
		}
		if sub, _ := k.Submit(ctx, read("claude")); sub.Verdict.Level != action.Auto {
			t.Fatalf("instance %d, another agent: %s", i, sub.Verdict.Summary())
		}
	}
}

// A lease an instance did not use is given back when it closes: the other
// instances may admit those calls.
func TestSharedRateLimitLeaseGivenBack(t *testing.T) {
	defer kernel.SetPauseRecheck(0)()
	ctx := context.Background()
	ks, _, _ := openShared(t, 2, time.Second)
	sharedLimit(t, ks, limit("rl", 100, usage.Block))
	// Instance 0 takes leases as its use grows (1, 2, 4, … calls).
	for range 10 {
		if sub, _ := ks[0].Submit(ctx, read("codex")); sub.Verdict.Level != action.Auto {
			t.Fatalf("instance 0: %s", sub.Verdict.Summary())
		}
	}
	if err := ks[0].Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		sub, _ := ks[1].Submit(ctx, read("codex"))
		if sub.Verdict.Level != action.Auto {
			break
		}
		n++
		if n > 100 {
			t.Fatal("instance 1 admits over the limit")
		}
	}
	if n != 90 {
		t.Fatalf("instance 1 admitted %d calls after instance 0 used 10 of 100", n)
	}
}

// Spend recorded on one instance near a cap counts against the cap on the
// others at once: written through and announced, and an instance that
// learns the fleet is near a cap writes what it has not written yet. The
// write-behind and the ten-second re-read are turned off for the test.
func TestSharedSpendAtTheEdge(t *testing.T) {
	defer kernel.SetPauseRecheck(0)()
	defer kernel.SetSpendReread(time.Hour)()
	defer kernel.SetFlushInterval(time.Hour)()
	ctx := context.Background()
	ks, _, _ := openShared(t, 2, time.Second)
	a, b := ks[0], ks[1]
	if _, err := a.PutBudgetCap(ctx, usage.BudgetCap{ID: "day", Scope: usage.ScopeGlobal, MaxCostUSD: 1, Period: usage.Daily,
		Action: usage.Stop, Enabled: true}, "ann"); err != nil {
		t.Fatal(err)
	}
	for len(b.BudgetCaps()) == 0 {
		b.Evaluate(ctx, read("nobody"))
		time.Sleep(10 * time.Millisecond)
	}
	spent := func(k *kernel.Kernel) float64 {
		for _, st := range k.Budgets() {
			return st.Spent
		}
		return -1
	}
	deadline := time.Now().Add(10 * time.Second)
	waitSpent := func(k *kernel.Kernel, want float64) {
		t.Helper()
		for spent(k) < want-0.001 {
			if time.Now().After(deadline) {
				t.Fatalf("the instance sees $%.2f, want $%.2f", spent(k), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// Far from the cap, b's spend is written behind (not yet).
	b.RecordUse(ctx, kernel.Use{Agent: "codex", Session: "s1", Model: "m", CostUSD: 0.5})
	time.Sleep(100 * time.Millisecond)
	if got := spent(a); got != 0 {
		t.Fatalf("a sees $%.2f before anything near a cap was written", got)
	}
	// a comes near the cap on its own: its spend is written through; b
	// reads it, is then near the cap with its own, and writes that
	// through; a reads it. Both refuse.
	a.RecordUse(ctx, kernel.Use{Agent: "claude", Session: "s2", Model: "m", CostUSD: 0.4})
	b.RecordUse(ctx, kernel.Use{Agent: "claude", Session: "s2", Model: "m", CostUSD: 0.01})
	a.RecordUse(ctx, kernel.Use{Agent: "claude", Session: "s2", Model: "m", CostUSD: 0.4})
	waitSpent(b, 1.31)
	waitSpent(a, 1.31)
	for i, k := range ks {
		sub, _ := k.Submit(ctx, read("codex"))
		if sub.Verdict.Level != action.Block || !strings.Contains(sub.Verdict.Summary(), "budget cap day") {
			t.Fatalf("instance %d over the cap: %s", i, sub.Verdict.Summary())
		}
	}
}

// Repeat detection counts a session's calls whichever instance judged
// them: the same call made once on each of two instances and a third time
// on the first is a loop (settings.loop: the third identical call within
// five minutes), as it is on one instance. A person's approval of the call
// the loop limit put to them starts the count again on both. A session
// longer than a published batch holds is counted too: its samples were
// left out of the batches, so an agent that named its session so looped
// unseen across the instances. So is a long tool name (one longer than an
// indexed column stores is not recorded on PostgreSQL at all: its call
// fails closed, TestSharedNULNames).
func TestSharedRepeatDetection(t *testing.T) {
	for _, tc := range []struct{ name, session, tool string }{
		{"short", "loop", "Read"},
		{"long session", strings.Repeat("loop-", 2000), "Read"},
		{"long tool", "loop", "Read" + strings.Repeat("_", 2000)},
	} {
		t.Run(tc.name, func(t *testing.T) { sharedRepeatDetection(t, tc.session, tc.tool) })
	}
}

func sharedRepeatDetection(t *testing.T, session, tool string) {
	ctx := context.Background()
	ks, _, _ := openShared(t, 2, 20*time.Millisecond)
	a, b := ks[0], ks[1]
	same := func() *action.Action {
		return &action.Action{Tool: tool, Kind: action.KindFileRead, Agent: "codex", Session: session, Cwd: "/proj",
			Args: map[string]any{"file_path": "/proj/same.go"}}
	}
	looped := func(v action.Verdict) bool {
		for _, r := range v.Reasons {
			if r.Source == action.SourceLoop {
				return true
			}
		}
		return false
	}
	for i, k := range []*kernel.Kernel{a, b} {
		if sub, err := k.Submit(ctx, same()); err != nil || looped(sub.Verdict) {
			t.Fatalf("call %d: %v %s", i+1, err, sub.Verdict.Summary())
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for !looped(a.Evaluate(ctx, same())) {
		if time.Now().After(deadline) {
			v := a.Evaluate(ctx, same())
			t.Fatalf("the first instance does not count the call the second judged: %s", v.Summary())
		}
		time.Sleep(10 * time.Millisecond)
	}
	sub, err := a.Submit(ctx, same())
	if err != nil || !looped(sub.Verdict) || sub.Approval == nil {
		t.Fatalf("the third call: %v %s", err, sub.Verdict.Summary())
	}
	// Approved on the second instance: neither counts the earlier calls.
	if _, ok, err := b.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "test"}); err != nil || !ok {
		t.Fatalf("answer: %v %v", ok, err)
	}
	// A wait of its own: under load the first one may have used most of
	// its deadline.
	deadline = time.Now().Add(20 * time.Second)
	for _, k := range ks {
		for looped(k.Evaluate(ctx, same())) {
			if time.Now().After(deadline) {
				t.Fatal("the count did not start again after the approval")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Two instances' submission quotas draw on the same buckets: together they
// serve exactly the burst of a quota that does not refill during the test,
// from many goroutines, and refuse the rest with the shared bucket's wait.
func TestSharedQuotas(t *testing.T) {
	ks, _, _ := openShared(t, 2, time.Second)
	const burst = 40
	cfg := limits.Config{Agent: limits.Scope{Requests: limits.Rate{PerMinute: 0.001, Burst: burst}}}
	qs := []*limits.Quotas{limits.NewQuotas(cfg, nil), limits.NewQuotas(cfg, nil)}
	for i, q := range qs {
		q.SetPool(ks[i].QuotaPool)
	}
	var (
		wg             sync.WaitGroup
		mu             sync.Mutex
		served, denied int
	)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 15 {
				d := qs[w%2].Take("codex", fmt.Sprint("s", w), 100)
				mu.Lock()
				if d == nil {
					served++
				} else {
					if d.Scope != "agent" || d.RetryAfter < time.Minute {
						t.Errorf("refused by %+v", d)
					}
					denied++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if served > burst {
		t.Fatalf("the fleet served %d requests (%d refused); the burst is %d", served, denied, burst)
	}
	// Credit an instance still holds (its requests ended first) is served
	// by its next requests: nothing is lost.
	for _, q := range qs {
		for range 3 {
			for q.Take("codex", "drain", 1) == nil {
				served++
			}
		}
	}
	if served != burst {
		t.Fatalf("the fleet served %d requests in all; the burst is %d", served, burst)
	}
	// Another agent has its own bucket.
	if d := qs[1].Take("claude", "s", 1); d != nil {
		t.Fatalf("another agent: %+v", d)
	}
	// A bucket that refilled is forgotten; the others are kept.
	fast := limits.NewQuotas(limits.Config{Agent: limits.Scope{Requests: limits.Rate{PerMinute: 60000, Burst: 5}}}, nil)
	fast.SetPool(ks[0].QuotaPool)
	if d := fast.Take("brief", "s", 1); d != nil {
		t.Fatalf("fast: %+v", d)
	}
	time.Sleep(50 * time.Millisecond) // 1,000 a second: full again
	if n, err := ks[1].PruneQuotaBuckets(context.Background()); err != nil || n != 1 {
		t.Fatalf("pruned %d buckets (%v), want the refilled one", n, err)
	}
	if d := qs[0].Take("codex", "after", 1); d == nil {
		t.Fatal("the empty bucket was forgotten")
	}
	// A session's bucket (its key holds the agent's and the session's
	// names, joined by NUL) is shared too.
	sess := limits.Config{Session: limits.Scope{Requests: limits.Rate{PerMinute: 0.001, Burst: 2}}}
	ss := []*limits.Quotas{limits.NewQuotas(sess, nil), limits.NewQuotas(sess, nil)}
	for i, q := range ss {
		q.SetPool(ks[i].QuotaPool)
	}
	for i := range 2 {
		if d := ss[i].Take("codex", "one", 1); d != nil {
			t.Fatalf("session quota, request %d: %+v", i, d)
		}
	}
	if d := ss[0].Take("codex", "one", 1); d == nil || d.Scope != "session" {
		t.Fatalf("session quota past its burst across instances: %+v", d)
	}
}

// BenchmarkSharedSubmitLimited is a recorded submission on one of two
// instances on one database, without a rate limit and with one that counts
// every call (far from its maximum): what counting through leases adds
// (a lease transaction per block of up to 256 calls or per second).
func BenchmarkSharedSubmitLimited(b *testing.B) {
	for _, limited := range []bool{false, true} {
		name := "no-limit"
		if limited {
			name = "limit"
		}
		b.Run(name, func(b *testing.B) {
			ks, _, _ := openShared(b, 2, time.Second)
			ctx := context.Background()
			if limited {
				if _, err := ks[0].PutRateLimit(ctx, usage.RateLimit{ID: "rl", MaxCalls: usage.MaxCalls, WindowSeconds: 3600,
					Action: usage.Block, Enabled: true}, "ann"); err != nil {
					b.Fatal(err)
				}
				for len(ks[1].RateLimits()) == 0 {
					ks[1].Evaluate(ctx, read("nobody"))
					time.Sleep(10 * time.Millisecond)
				}
			}
			for i := 0; b.Loop(); i++ {
				if sub, err := ks[i%2].Submit(ctx, read("codex")); err != nil || sub.Verdict.Level != action.Auto {
					b.Fatalf("%v %v", err, sub)
				}
			}
		})
	}
}

// A tick's samples go out packed in payloads within the bound, every one
// of them once and in order, however many there are.
func TestSharedSamplesPacked(t *testing.T) {
	db, err := postgres.Open(t.Context(), pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	changes := make(chan store.Change, 1000)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go db.Watch(ctx, func(c store.Change) { changes <- c })
	if c := <-changes; c.Kind != store.ChangeResync {
		t.Fatalf("first change %+v", c)
	}
	const n = 2500
	kernel.PublishSamples(db, "inst", n)
	next := 0
	var sizes []int
	for next < n {
		select {
		case c := <-changes:
			if c.Kind != "samples" {
				continue
			}
			sizes = append(sizes, len(c.ID))
			if len(c.ID) > store.MaxPublish {
				t.Fatalf("a payload of %d bytes", len(c.ID))
			}
			body, ok := strings.CutPrefix(c.ID, "inst|")
			if !ok {
				t.Fatalf("payload %.40q…", c.ID)
			}
			var list []struct {
				S string `json:"s"`
			}
			if err := json.Unmarshal([]byte(body), &list); err != nil {
				t.Fatal(err)
			}
			for _, s := range list {
				if s.S != fmt.Sprintf("s%d", next) {
					t.Fatalf("sample %q, want s%d", s.S, next)
				}
				next++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d samples heard of %d", next, n)
		}
	}
	// Greedy packing: a payload ends only when the next sample does not
	// fit (a sample here is under 200 bytes).
	for i, sz := range sizes[:len(sizes)-1] {
		if sz < store.MaxPublish-200 {
			t.Errorf("payload %d of %d has %d bytes", i, len(sizes), sz)
		}
	}
}

// An auto-rule added on one instance is read by another before its next
// call once it heard the change announced: well before the second after
// which it would read the rule changes anyway.
func TestSharedAutoRuleAnnounced(t *testing.T) {
	ctx := context.Background()
	ks, _, _ := openShared(t, 2, 50*time.Millisecond)
	proj := t.TempDir()
	judge := func(k *kernel.Kernel) action.Level {
		t.Helper()
		if err := k.SyncControls(ctx); err != nil { // as Submit does before judging
			t.Fatal(err)
		}
		return k.Evaluate(ctx, &action.Action{Agent: "a", Session: "s", Tool: "Bash",
			Args: map[string]any{"command": "docker run alpine"}, Cwd: proj}).Level
	}
	if l := judge(ks[1]); l != action.Confirm {
		t.Fatalf("docker run before the rule: %s, want confirm", l)
	}
	start := time.Now()
	if _, err := ks[0].PutAutoRule(ctx, autorule.Rule{Name: "less docker", Enabled: true, Priority: 1,
		Trigger: autorule.Trigger{Type: autorule.TriggerPattern, Tool: "shell", Text: "docker"},
		Action:  autorule.Action{Type: autorule.ActDowngradeRisk}}, "alice"); err != nil {
		t.Fatal(err)
	}
	for judge(ks[1]) != action.Notify {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the other instance never applied the rule")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Since(start); d > 800*time.Millisecond {
		t.Errorf("the other instance applied the rule after %v: not on the announcement", d)
	}
}

// An agent paused on one instance is refused on the others as soon as
// they hear the change announced, not at their next periodic read of the
// pauses (a second later): the paused agent's calls through another
// instance ran meanwhile. Resuming, and a new rate limit, are heard alike.
func TestSharedPauseAnnounced(t *testing.T) {
	ctx := context.Background()
	ks, _, _ := openShared(t, 2, time.Minute)
	n := 0
	call := func() action.Level {
		t.Helper()
		n++ // a file of its own each time: no repeat
		sub, err := ks[1].Submit(ctx, &action.Action{Tool: "Read", Agent: "codex", Session: "p", Cwd: "/proj",
			Args: map[string]any{"file_path": fmt.Sprintf("/proj/p%d.go", n)}})
		if err != nil {
			t.Fatal(err)
		}
		return sub.Verdict.Level
	}
	for _, step := range []struct {
		name string
		do   func() error
		want action.Level
	}{
		{"pause", func() error { return ks[0].PauseAgent(ctx, "codex", "stop it", "ann") }, action.Block},
		{"resume", func() error { return ks[0].ResumeAgent(ctx, "codex", "ann") }, action.Auto},
		{"rate limit", func() error {
			_, err := ks[0].PutRateLimit(ctx, usage.RateLimit{ID: "one", Agent: "codex", MaxCalls: 1, WindowSeconds: 3600,
				Action: usage.Block, Enabled: true}, "ann")
			return err
		}, action.Block},
	} {
		if l := call(); l == step.want { // the second instance has just read the pauses
			t.Fatalf("before the %s: %s", step.name, l)
		}
		start := time.Now()
		if err := step.do(); err != nil {
			t.Fatal(err)
		}
		for call() != step.want {
			if time.Since(start) > 5*time.Second {
				t.Fatalf("the other instance never saw the %s", step.name)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if d := time.Since(start); d > 700*time.Millisecond {
			t.Errorf("the other instance saw the %s after %v: not on the announcement", step.name, d)
		}
	}
}
