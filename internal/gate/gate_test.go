package gate

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/store/sqlite"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// longPoll makes Wait rely on in-process wake-ups and the clock alone.
const longPoll = time.Hour

// openDB opens a real SQLite store at path and closes it when the test ends.
func openDB(t testing.TB, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newGate(t testing.TB, cfg Config) (*Gate, *clock.Fake, *sqlite.DB) {
	t.Helper()
	db := openDB(t, filepath.Join(t.TempDir(), "overseer.db"))
	clk := clock.NewFake(t0)
	return New(db, clk, cfg), clk, db
}

func rmAction(target string) (action.Action, action.Verdict) {
	a := action.Action{
		ID: "act_" + target, Agent: "claude-code", Session: "s1", Tool: "Bash", Kind: action.KindShell,
		Args: map[string]any{"command": "rm -rf " + target}, Cwd: "/home/u/project",
	}
	v := action.Verdict{
		Level:   action.Approve,
		Reasons: []action.Reason{{Layer: "L3", Source: action.SourceGuard, Name: "rm", Level: action.Approve, Message: "recursive delete"}},
		Preview: &action.Preview{Summary: "removes " + target},
	}
	v.ArgsHash = a.ArgsHash()
	return a, v
}

func answer(decision string) store.Answer {
	return store.Answer{Decision: decision, Who: "alice", Channel: "cli", Reason: "looked fine"}
}

// waitResult runs Wait in a goroutine and hands back its result.
type waitResult struct {
	ap  *store.Approval
	err error
}

func goWait(ctx context.Context, g *Gate, id string) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		ap, err := g.Wait(ctx, id)
		ch <- waitResult{ap, err}
	}()
	return ch
}

func recv(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return")
		return waitResult{}
	}
}

// awaitTimers waits (in real time, briefly) until n timers are set on clk,
// so that advancing it reaches a waiting goroutine.
func awaitTimers(t *testing.T, clk *clock.Fake, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for clk.Waiters() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d timers set, want %d", clk.Waiters(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRequestAnswerWait(t *testing.T) {
	g, clk, _ := newGate(t, Config{Timeout: time.Minute, Poll: longPoll})
	ctx := context.Background()
	a, v := rmAction("build")

	ap, err := g.Request(ctx, a, v)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ap.ID, "apr_") || len(ap.ID) != 20 || strings.ToLower(ap.ID) != ap.ID {
		t.Errorf("id %q: want apr_ + 16 lower-case characters", ap.ID)
	}
	if ap.Status != store.StatusPending || ap.ArgsHash != v.ArgsHash || ap.Tool != "Bash" ||
		ap.Session != "s1" || ap.ActionID != "act_build" || ap.Level != action.Approve {
		t.Errorf("stored approval = %+v", ap)
	}
	if !ap.Deadline.Equal(t0.Add(time.Minute)) || ap.DefaultDecision != DecisionDeny {
		t.Errorf("deadline %v default %q, want %v deny", ap.Deadline, ap.DefaultDecision, t0.Add(time.Minute))
	}

	res := goWait(ctx, g, ap.ID)
	awaitTimers(t, clk, 1) // Wait is past its first read
	clk.Advance(10 * time.Second)
	got, applied, err := g.Answer(ctx, ap.ID, answer(DecisionApprove))
	if err != nil || !applied {
		t.Fatalf("Answer: applied=%v err=%v", applied, err)
	}
	if got.Status != store.StatusApproved {
		t.Errorf("status after answer = %s", got.Status)
	}
	r := recv(t, res)
	if r.err != nil {
		t.Fatalf("Wait: %v", r.err)
	}
	if !Allowed(r.ap) {
		t.Errorf("Wait result not allowed: %+v", r.ap)
	}
	ans := r.ap.Answer
	if ans == nil || ans.Who != "alice" || ans.Channel != "cli" || !ans.Applied || !ans.At.Equal(t0.Add(10*time.Second)) {
		t.Errorf("terminal answer = %+v", ans)
	}
}

func TestAnswerDecisions(t *testing.T) {
	tests := []struct {
		decision string
		want     store.ApprovalStatus
		allowed  bool
	}{
		{DecisionApprove, store.StatusApproved, true},
		{DecisionDeny, store.StatusDenied, false},
		{DecisionAbort, store.StatusAborted, false},
	}
	for _, tt := range tests {
		t.Run(tt.decision, func(t *testing.T) {
			g, _, _ := newGate(t, Config{Poll: longPoll})
			ctx := context.Background()
			a, v := rmAction("x")
			ap, err := g.Request(ctx, a, v)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := g.Answer(ctx, ap.ID, answer(tt.decision)); err != nil {
				t.Fatal(err)
			}
			got, err := g.Wait(ctx, ap.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.want || Allowed(got) != tt.allowed {
				t.Errorf("status %s allowed %v, want %s %v", got.Status, Allowed(got), tt.want, tt.allowed)
			}
		})
	}
}

func TestFirstAnswerWins(t *testing.T) {
	g, clk, _ := newGate(t, Config{Poll: longPoll})
	ctx := context.Background()
	a, v := rmAction("dist")
	ap, err := g.Request(ctx, a, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, applied, err := g.Answer(ctx, ap.ID, answer(DecisionDeny)); err != nil || !applied {
		t.Fatalf("first answer: applied=%v err=%v", applied, err)
	}
	clk.Advance(time.Second)
	late := store.Answer{Decision: DecisionApprove, Who: "bob", Channel: "web"}
	got, applied, err := g.Answer(ctx, ap.ID, late)
	if err != nil {
		t.Fatal(err)
	}
	if applied {
		t.Error("late answer applied")
	}
	if got.Status != store.StatusDenied || got.Answer.Who != "alice" {
		t.Errorf("status %s by %s, want denied by alice", got.Status, got.Answer.Who)
	}
	if len(got.Answers) != 2 || !got.Answers[0].Applied || got.Answers[1].Applied ||
		got.Answers[1].Who != "bob" || !got.Answers[1].At.Equal(t0.Add(time.Second)) {
		t.Errorf("answers = %+v", got.Answers)
	}
}

// TestAnswerAcrossProcesses: two store handles on one SQLite file stand for
// two processes; one waits, the other answers.
func TestAnswerAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	dbA, dbB := openDB(t, path), openDB(t, path)
	clk := clock.NewFake(t0)
	cfg := Config{Timeout: time.Minute, Poll: 10 * time.Millisecond}
	waiter, answerer := New(dbA, clk, cfg), New(dbB, clk, cfg)
	ctx := context.Background()

	for _, decision := range []string{DecisionApprove, DecisionDeny} {
		t.Run(decision, func(t *testing.T) {
			a, v := rmAction("tmp-" + decision)
			ap, err := waiter.Request(ctx, a, v)
			if err != nil {
				t.Fatal(err)
			}
			res := goWait(ctx, waiter, ap.ID)
			pending, err := answerer.Pending(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(pending) != 1 || pending[0].ID != ap.ID {
				t.Fatalf("other process sees pending %v", pending)
			}
			if _, applied, err := answerer.Answer(ctx, ap.ID, answer(decision)); err != nil || !applied {
				t.Fatalf("answer: applied=%v err=%v", applied, err)
			}
			r := recv(t, res)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if want := statusFor(decision); r.ap.Status != want {
				t.Errorf("waiter saw %s, want %s", r.ap.Status, want)
			}
		})
	}
}

func TestTimeoutAppliesDefault(t *testing.T) {
	tests := []struct {
		name     string
		def      string
		decision string
		allowed  bool
	}{
		{"unset is deny", "", DecisionDeny, false},
		{"deny", DecisionDeny, DecisionDeny, false},
		{"approve", DecisionApprove, DecisionApprove, true},
		{"unknown is deny", "perhaps", DecisionDeny, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, clk, _ := newGate(t, Config{Timeout: 30 * time.Second, Default: tt.def, Poll: longPoll})
			ctx := context.Background()
			events := g.Subscribe(t.Context())
			a, v := rmAction("cache")
			ap, err := g.Request(ctx, a, v)
			if err != nil {
				t.Fatal(err)
			}
			res := goWait(ctx, g, ap.ID)
			awaitTimers(t, clk, 1)
			clk.Advance(29 * time.Second)
			select {
			case r := <-res:
				t.Fatalf("Wait returned before the deadline: %+v", r)
			case <-time.After(20 * time.Millisecond):
			}
			clk.Advance(time.Second)
			r := recv(t, res)
			if r.err != nil {
				t.Fatal(r.err)
			}
			got := r.ap
			if got.Status != store.StatusExpired || got.Answer == nil || got.Answer.Decision != tt.decision ||
				got.Answer.Who != TimeoutActor || got.Answer.Channel != TimeoutActor || !got.Answer.At.Equal(t0.Add(30*time.Second)) {
				t.Errorf("after timeout: status %s answer %+v", got.Status, got.Answer)
			}
			if Allowed(got) != tt.allowed {
				t.Errorf("Allowed = %v, want %v", Allowed(got), tt.allowed)
			}
			// A person answering afterwards is recorded only.
			late, applied, err := g.Answer(ctx, ap.ID, answer(DecisionApprove))
			if err != nil || applied || late.Status != store.StatusExpired {
				t.Errorf("late answer: applied=%v status=%s err=%v", applied, late.Status, err)
			}
			wantTypes := []string{EventRequested, EventExpired, EventAnswered}
			for _, want := range wantTypes {
				if e := <-events; e.Type != want || e.Approval.ID != ap.ID {
					t.Errorf("event %s %s, want %s", e.Type, e.Approval.ID, want)
				}
			}
		})
	}
}

// TestAnswerAfterDeadline: with no waiter to apply it, the default still
// comes first for an answer given after the deadline — unless the answer is
// stricter than the default.
func TestAnswerAfterDeadline(t *testing.T) {
	tests := []struct {
		name       string
		def        string
		decision   string
		wantStatus store.ApprovalStatus
		applied    bool
		allowed    bool
	}{
		{"approve after default deny", DecisionDeny, DecisionApprove, store.StatusExpired, false, false},
		{"deny after default deny", DecisionDeny, DecisionDeny, store.StatusExpired, false, false},
		{"approve after default approve", DecisionApprove, DecisionApprove, store.StatusExpired, false, true},
		{"deny beats a due default approve", DecisionApprove, DecisionDeny, store.StatusDenied, true, false},
		{"abort beats a due default approve", DecisionApprove, DecisionAbort, store.StatusAborted, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, clk, _ := newGate(t, Config{Timeout: time.Minute, Default: tt.def, Poll: longPoll})
			ctx := context.Background()
			a, v := rmAction("old")
			ap, err := g.Request(ctx, a, v)
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Minute)
			got, applied, err := g.Answer(ctx, ap.ID, answer(tt.decision))
			if err != nil {
				t.Fatal(err)
			}
			if applied != tt.applied || got.Status != tt.wantStatus || Allowed(got) != tt.allowed {
				t.Errorf("applied=%v status=%s allowed=%v, want %v %s %v",
					applied, got.Status, Allowed(got), tt.applied, tt.wantStatus, tt.allowed)
			}
			last := got.Answers[len(got.Answers)-1]
			if last.Who != "alice" || last.Applied != tt.applied {
				t.Errorf("answers = %+v", got.Answers)
			}
			if !tt.applied && (len(got.Answers) != 2 || got.Answers[0].Who != TimeoutActor) {
				t.Errorf("default not applied first: %+v", got.Answers)
			}
		})
	}
}

func TestRestartKeepsPending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overseer.db")
	clk := clock.NewFake(t0)
	ctx := context.Background()
	cfg := Config{Timeout: time.Minute, Poll: longPoll}

	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	g := New(db, clk, cfg)
	a, v := rmAction("restart")
	keep, err := g.Request(ctx, a, v)
	if err != nil {
		t.Fatal(err)
	}
	a2, v2 := rmAction("expire-me")
	expireMe, err := g.Request(ctx, a2, v2)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// The daemon comes back; the second request's deadline passed while it was down.
	g = New(openDB(t, path), clk, cfg)
	pending, err := g.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 2 || pending[0].ID != keep.ID || pending[1].ID != expireMe.ID {
		t.Fatalf("pending after restart = %v", pending)
	}
	if p := pending[0].Verdict.Preview; p == nil || p.Summary != "removes restart" {
		t.Errorf("pending approval lost its verdict preview: %+v", p)
	}

	res := goWait(ctx, g, keep.ID)
	awaitTimers(t, clk, 1)
	if _, _, err := g.Answer(ctx, keep.ID, answer(DecisionApprove)); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, res); r.err != nil || r.ap.Status != store.StatusApproved {
		t.Errorf("wait after restart: %v %v", r.err, r.ap)
	}

	// Time passes for the other one only now: ExpireDue applies its default.
	if n, err := g.ExpireDue(ctx); err != nil || n != 0 {
		t.Fatalf("ExpireDue before deadline = %d, %v", n, err)
	}
	clk.Advance(time.Minute)
	if n, err := g.ExpireDue(ctx); err != nil || n != 1 {
		t.Fatalf("ExpireDue = %d, %v; want 1", n, err)
	}
	got, err := g.Get(ctx, expireMe.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.StatusExpired || got.Answer.Decision != DecisionDeny {
		t.Errorf("expired approval = %s %+v", got.Status, got.Answer)
	}
	if n, err := g.ExpireDue(ctx); err != nil || n != 0 {
		t.Errorf("second ExpireDue = %d, %v; want 0", n, err)
	}
}

// TestExpireUnknownDefaultDenies: a stored default that is not a known
// decision (a corrupt or hand-edited record) fails closed.
func TestExpireUnknownDefaultDenies(t *testing.T) {
	g, clk, db := newGate(t, Config{Poll: longPoll})
	ctx := context.Background()
	a, v := rmAction("odd")
	ap := &store.Approval{
		ID: "apr_handmade000000000", Tool: a.Tool, Kind: a.Kind, Level: action.Approve, ArgsHash: v.ArgsHash,
		Action: a, Verdict: v, Status: store.StatusPending, CreatedAt: t0, Deadline: t0.Add(time.Second),
		DefaultDecision: "allow",
	}
	if err := db.CreateApproval(ctx, ap); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	got, err := g.Wait(ctx, ap.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.StatusExpired || got.Answer.Decision != DecisionDeny || Allowed(got) {
		t.Errorf("expired with unknown default: %s %+v", got.Status, got.Answer)
	}
}

func TestWaitContextCancelLeavesPending(t *testing.T) {
	g, clk, _ := newGate(t, Config{Poll: longPoll})
	a, v := rmAction("ctx")
	ap, err := g.Request(context.Background(), a, v)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	res := goWait(ctx, g, ap.ID)
	awaitTimers(t, clk, 1)
	cancel()
	r := recv(t, res)
	if !errors.Is(r.err, context.Canceled) || r.ap != nil {
		t.Fatalf("Wait after cancel = %v, %v; want context.Canceled", r.ap, r.err)
	}
	got, err := g.Get(context.Background(), ap.ID)
	if err != nil || got.Status != store.StatusPending {
		t.Fatalf("after cancel: %v %v, want pending", got, err)
	}
	if _, applied, err := g.Answer(context.Background(), ap.ID, answer(DecisionApprove)); err != nil || !applied {
		t.Errorf("answer after the waiter left: applied=%v err=%v", applied, err)
	}
}

func TestAnswerValidation(t *testing.T) {
	g, _, _ := newGate(t, Config{Poll: longPoll})
	ctx := context.Background()
	a, v := rmAction("v")
	ap, err := g.Request(ctx, a, v)
	if err != nil {
		t.Fatal(err)
	}
	ok := answer(DecisionApprove)
	tests := []struct {
		name string
		edit func(*store.Answer)
	}{
		{"empty decision", func(a *store.Answer) { a.Decision = "" }},
		{"unknown decision", func(a *store.Answer) { a.Decision = "maybe" }},
		{"upper-case decision", func(a *store.Answer) { a.Decision = "APPROVE" }},
		{"no who", func(a *store.Answer) { a.Who = "" }},
		{"blank who", func(a *store.Answer) { a.Who = "  " }},
		{"no channel", func(a *store.Answer) { a.Channel = "" }},
		{"posing as timeout", func(a *store.Answer) { a.Who = TimeoutActor }},
		{"timeout channel", func(a *store.Answer) { a.Channel = TimeoutActor }},
		{"bad remember", func(a *store.Answer) { a.Remember = "forever" }},
		{"rule without remember=rule", func(a *store.Answer) { a.Rule = []byte(`{"tool":"Bash"}`) }},
		{"rule not JSON", func(a *store.Answer) { a.Remember = RememberRule; a.Rule = []byte(`{tool`) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ans := ok
			tt.edit(&ans)
			if _, _, err := g.Answer(ctx, ap.ID, ans); !errors.Is(err, ErrInvalidAnswer) {
				t.Errorf("err = %v, want ErrInvalidAnswer", err)
			}
		})
	}
	t.Run("unknown id", func(t *testing.T) {
		if _, _, err := g.Answer(ctx, "apr_nosuchthing00000", ok); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("err = %v, want store.ErrNotFound", err)
		}
		if _, err := g.Wait(ctx, "apr_nosuchthing00000"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Wait err = %v, want store.ErrNotFound", err)
		}
		if _, err := g.Get(ctx, "apr_nosuchthing00000"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get err = %v, want store.ErrNotFound", err)
		}
	})
	t.Run("rule with remember=rule", func(t *testing.T) {
		ans := ok
		ans.Remember, ans.Rule = RememberRule, []byte(`{"tool":"Bash","level":"approve"}`)
		if err := validateAnswer(ans); err != nil {
			t.Errorf("valid answer refused: %v", err)
		}
	})
	for _, rem := range []string{RememberNone, RememberOnce, RememberSession, RememberRule} {
		t.Run("remember "+rem, func(t *testing.T) {
			ans := ok
			ans.Remember = rem
			if err := validateAnswer(ans); err != nil {
				t.Errorf("valid answer refused: %v", err)
			}
		})
	}
	got, err := g.Get(ctx, ap.ID)
	if err != nil || got.Status != store.StatusPending || len(got.Answers) != 0 {
		t.Errorf("invalid answers changed the approval: %+v %v", got, err)
	}
}

// TestFailClosedOnStoreError: with the store gone, nothing is approved.
func TestFailClosedOnStoreError(t *testing.T) {
	g, _, db := newGate(t, Config{Poll: longPoll})
	ctx := context.Background()
	a, v := rmAction("closed")
	ap, err := g.Request(ctx, a, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Answer(ctx, ap.ID, answer(DecisionApprove)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got, err := g.Wait(ctx, ap.ID); err == nil || Allowed(got) {
		t.Errorf("Wait on a closed store = %v, %v; want an error and no approval", got, err)
	}
	if _, err := g.Request(ctx, a, v); err == nil {
		t.Error("Request on a closed store succeeded")
	}
	if _, err := g.TakeApproved(ctx, v.ArgsHash, CallerOf(&a)); err == nil {
		t.Error("TakeApproved on a closed store succeeded")
	}
	if _, err := g.ExpireDue(ctx); err == nil {
		t.Error("ExpireDue on a closed store succeeded")
	}
}

func TestUnsetLevelIsStoredStrict(t *testing.T) {
	g, _, _ := newGate(t, Config{Poll: longPoll})
	a, _ := rmAction("unset")
	v := action.Verdict{Reasons: []action.Reason{{Layer: "L3", Message: "undecided"}}}
	ap, err := g.Request(context.Background(), a, v)
	if err != nil {
		t.Fatal(err)
	}
	if ap.Level != action.Approve || ap.Verdict.Reasons[0].Level != action.Approve {
		t.Errorf("levels = %v / %v, want approve", ap.Level, ap.Verdict.Reasons[0].Level)
	}
	if v.Reasons[0].Level != action.Unset {
		t.Error("Request changed the caller's verdict")
	}
	if ap.ArgsHash != a.ArgsHash() {
		t.Errorf("args hash %q, want the action's own", ap.ArgsHash)
	}
}

func TestAllowed(t *testing.T) {
	approve := &store.Answer{Decision: DecisionApprove}
	deny := &store.Answer{Decision: DecisionDeny}
	tests := []struct {
		name string
		ap   *store.Approval
		want bool
	}{
		{"nil", nil, false},
		{"pending", &store.Approval{Status: store.StatusPending}, false},
		{"approved", &store.Approval{Status: store.StatusApproved, Answer: approve}, true},
		{"approved without answer", &store.Approval{Status: store.StatusApproved}, false},
		{"approved but answer says deny", &store.Approval{Status: store.StatusApproved, Answer: deny}, false},
		{"denied", &store.Approval{Status: store.StatusDenied, Answer: deny}, false},
		{"aborted", &store.Approval{Status: store.StatusAborted, Answer: &store.Answer{Decision: DecisionAbort}}, false},
		{"expired deny", &store.Approval{Status: store.StatusExpired, Answer: deny}, false},
		{"expired approve", &store.Approval{Status: store.StatusExpired, Answer: approve}, true},
		{"pending with approve answer", &store.Approval{Status: store.StatusPending, Answer: approve}, false},
		{"unknown status", &store.Approval{Status: "weird", Answer: approve}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Allowed(tt.ap); got != tt.want {
				t.Errorf("Allowed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero", Config{}, true},
		{"approve default", Config{Default: DecisionApprove}, true},
		{"deny default", Config{Default: DecisionDeny, Timeout: time.Minute, Poll: time.Second}, true},
		{"abort default", Config{Default: DecisionAbort}, false},
		{"typo default", Config{Default: "Approve"}, false},
		{"negative timeout", Config{Timeout: -time.Second}, false},
		{"negative poll", Config{Poll: -time.Second}, false},
		{"negative retry window", Config{RetryWindow: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	got := New(nil, clock.Real{}, Config{Default: "Approve"}).Config()
	if got.Default != DecisionDeny || got.Timeout != DefaultTimeout || got.Poll != DefaultPoll || got.RetryWindow != DefaultRetryWindow {
		t.Errorf("defaults = %+v", got)
	}
}

func TestSubscribe(t *testing.T) {
	g, _, _ := newGate(t, Config{Poll: longPoll})
	ctx := context.Background()
	subCtx, cancel := context.WithCancel(context.Background())
	events := g.Subscribe(subCtx)
	slow := g.Subscribe(t.Context()) // never read

	var ids []string
	for i := range SubscriberBuffer + 5 {
		a, v := rmAction("many-" + string(rune('a'+i%26)) + strings.Repeat("x", i))
		ap, err := g.Request(ctx, a, v)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ap.ID)
		if e := <-events; e.Type != EventRequested || e.Approval.ID != ap.ID {
			t.Fatalf("event %d = %s %s", i, e.Type, e.Approval.ID)
		}
	}
	if _, _, err := g.Answer(ctx, ids[0], answer(DecisionDeny)); err != nil {
		t.Fatal(err)
	}
	if e := <-events; e.Type != EventAnswered || e.Approval.Status != store.StatusDenied {
		t.Errorf("answer event = %s %s", e.Type, e.Approval.Status)
	}
	if got, want := g.Dropped(), uint64(6); got != want {
		t.Errorf("Dropped = %d, want %d (the slow subscriber's overflow)", got, want)
	}
	if n := len(slow); n != SubscriberBuffer {
		t.Errorf("slow subscriber holds %d events, want %d", n, SubscriberBuffer)
	}
	cancel()
	select {
	case _, open := <-events:
		if open {
			t.Error("event after cancel")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("channel not closed after its context ended")
	}
}

func TestFindAndTakeApproved(t *testing.T) {
	g, clk, _ := newGate(t, Config{Poll: longPoll, RetryWindow: 10 * time.Minute})
	ctx := context.Background()
	a, v := rmAction("retry")

	notFound := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: err = %v, want store.ErrNotFound", what, err)
		}
	}
	_, err := g.FindApproved(ctx, v.ArgsHash, CallerOf(&a))
	notFound(t, "nothing asked yet", err)

	old, err := g.Request(ctx, a, v)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.FindApproved(ctx, v.ArgsHash, CallerOf(&a))
	notFound(t, "pending", err)
	if _, _, err := g.Answer(ctx, old.ID, answer(DecisionApprove)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	newer, err := g.Request(ctx, a, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Answer(ctx, newer.ID, answer(DecisionApprove)); err != nil {
		t.Fatal(err)
	}
	denied, err := g.Request(ctx, a, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Answer(ctx, denied.ID, answer(DecisionDeny)); err != nil {
		t.Fatal(err)
	}

	got, err := g.FindApproved(ctx, v.ArgsHash, CallerOf(&a))
	if err != nil || got.ID != newer.ID {
		t.Fatalf("FindApproved = %v, %v; want the newest approval %s", got, err, newer.ID)
	}
	_, err = g.FindApproved(ctx, v.ArgsHash+"0", CallerOf(&a))
	notFound(t, "other hash", err)
	// A person's yes is for the agent and session that asked: the same
	// call from another session or agent does not ride on it.
	_, err = g.FindApproved(ctx, v.ArgsHash, Caller{Agent: a.Agent, Session: "s2"})
	notFound(t, "other session", err)
	_, err = g.TakeApproved(ctx, v.ArgsHash, Caller{Agent: "codex", Session: a.Session})
	notFound(t, "other agent", err)
	_, err = g.FindApproved(ctx, "", CallerOf(&a))
	notFound(t, "empty hash", err)

	// Each approval lets exactly one call through, newest first.
	for _, want := range []string{newer.ID, old.ID} {
		got, err := g.TakeApproved(ctx, v.ArgsHash, CallerOf(&a))
		if err != nil || got.ID != want {
			t.Fatalf("TakeApproved = %v, %v; want %s", got, err, want)
		}
	}
	_, err = g.TakeApproved(ctx, v.ArgsHash, CallerOf(&a))
	notFound(t, "all consumed", err)
	if err := g.Consume(ctx, old.ID); !errors.Is(err, ErrConsumed) {
		t.Errorf("Consume twice: %v, want ErrConsumed", err)
	}
	if err := g.Consume(ctx, denied.ID); !errors.Is(err, ErrNotApproved) {
		t.Errorf("Consume denied: %v, want ErrNotApproved", err)
	}
	// Wait on a consumed approval must not let a second call through.
	if got, err := g.Wait(ctx, old.ID); !errors.Is(err, ErrConsumed) {
		t.Errorf("Wait on consumed = %v, %v; want ErrConsumed", got, err)
	}

	t.Run("outside retry window", func(t *testing.T) {
		a, v := rmAction("stale")
		ap, err := g.Request(ctx, a, v)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := g.Answer(ctx, ap.ID, answer(DecisionApprove)); err != nil {
			t.Fatal(err)
		}
		clk.Advance(10*time.Minute + time.Second)
		_, err = g.FindApproved(ctx, v.ArgsHash, CallerOf(&a))
		notFound(t, "stale approval", err)
	})
	t.Run("wait consumes", func(t *testing.T) {
		a, v := rmAction("waited")
		ap, err := g.Request(ctx, a, v)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := g.Answer(ctx, ap.ID, answer(DecisionApprove)); err != nil {
			t.Fatal(err)
		}
		if got, err := g.Wait(ctx, ap.ID); err != nil || !Allowed(got) {
			t.Fatalf("Wait = %v, %v", got, err)
		}
		_, err = g.FindApproved(ctx, v.ArgsHash, CallerOf(&a))
		notFound(t, "approval used by its waiter", err)
	})
}

// TestTakeApprovedRace: identical retries in two processes race for one
// approval; exactly one gets it.
func TestTakeApprovedRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	clk := clock.NewFake(t0)
	gates := []*Gate{New(openDB(t, path), clk, Config{Poll: longPoll}), New(openDB(t, path), clk, Config{Poll: longPoll})}
	ctx := context.Background()
	a, v := rmAction("race")
	ap, err := gates[0].Request(ctx, a, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gates[1].Answer(ctx, ap.ID, answer(DecisionApprove)); err != nil {
		t.Fatal(err)
	}
	const callers = 6
	var wg sync.WaitGroup
	results := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			_, err := gates[i%2].TakeApproved(ctx, v.ArgsHash, CallerOf(&a))
			results <- err
		})
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrNotFound):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d callers took the approval, want exactly 1", won)
	}
}

func TestAborts(t *testing.T) {
	var ab Aborts
	steps := []struct {
		op   string
		key  string
		want AbortStage
	}{
		{"stage", "s1", AbortNone},
		{"abort", "s1", AbortGentle},
		{"stage", "s1", AbortGentle},
		{"abort", "s2", AbortGentle},
		{"abort", "s1", AbortForce},
		{"abort", "s1", AbortForce},
		{"stage", "s2", AbortGentle},
		{"reset", "s1", AbortNone},
		{"abort", "s1", AbortGentle},
	}
	for i, s := range steps {
		var got AbortStage
		switch s.op {
		case "abort":
			got = ab.Abort(s.key)
		case "stage":
			got = ab.Stage(s.key)
		case "reset":
			ab.Reset(s.key)
			got = ab.Stage(s.key)
		}
		if got != s.want {
			t.Errorf("step %d %s(%s) = %v, want %v", i, s.op, s.key, got, s.want)
		}
	}
	for i := range maxAbortKeys + 10 {
		ab.Abort(strings.Repeat("k", 1) + string(rune(i)))
	}
	if n := len(ab.count); n > maxAbortKeys {
		t.Errorf("tracker holds %d keys, want at most %d", n, maxAbortKeys)
	}
	if ab.Stage("s2") != AbortNone {
		t.Error("oldest key not evicted")
	}
	names := map[AbortStage]string{AbortNone: "none", AbortGentle: "gentle", AbortForce: "force", 9: "abort_stage(9)"}
	for s, want := range names {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), want)
		}
	}
}

func TestWithdraw(t *testing.T) {
	g, clk, _ := newGate(t, Config{Timeout: time.Minute, Poll: longPoll})
	ctx := context.Background()
	a, v := rmAction("build")
	ap, err := g.Request(ctx, a, v)
	if err != nil {
		t.Fatal(err)
	}
	res := goWait(ctx, g, ap.ID)
	awaitTimers(t, clk, 1)
	got, applied, err := g.Withdraw(ctx, ap.ID, "the task was aborted")
	if err != nil || !applied || got.Status != store.StatusWithdrawn || got.Answer.Decision != DecisionWithdraw {
		t.Fatalf("withdraw: %v %v %+v", err, applied, got)
	}
	r := recv(t, res)
	if r.err != nil || Allowed(r.ap) || r.ap.Answer.Who != WithdrawnActor || r.ap.Answer.Reason != "the task was aborted" {
		t.Fatalf("the waiter saw %+v, %v", r.ap, r.err)
	}
	// A withdrawal after an answer is only recorded.
	ap2, _ := g.Request(ctx, a, v)
	if _, _, err := g.Answer(ctx, ap2.ID, answer(DecisionApprove)); err != nil {
		t.Fatal(err)
	}
	got, applied, err = g.Withdraw(ctx, ap2.ID, "late")
	if err != nil || applied || got.Status != store.StatusApproved {
		t.Fatalf("late withdraw: %v %v %s", err, applied, got.Status)
	}
	// Nobody may answer as the withdrawal.
	ap3, _ := g.Request(ctx, a, v)
	bad := answer(DecisionDeny)
	bad.Who = WithdrawnActor
	if _, _, err := g.Answer(ctx, ap3.ID, bad); !errors.Is(err, ErrInvalidAnswer) {
		t.Fatalf("an answer posing as a withdrawal: %v", err)
	}
}
