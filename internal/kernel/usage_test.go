package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/usage"
)

func limit(id string, max int, act usage.LimitAction) usage.RateLimit {
	return usage.RateLimit{ID: id, MaxCalls: max, WindowSeconds: 3600, Action: act, Enabled: true}
}

func alerts(t *testing.T, k *kernel.Kernel) []map[string]any {
	t.Helper()
	recs, err := k.Store.QueryAudit(context.Background(), store.AuditQuery{Types: []string{audit.TypeAlert}})
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, r := range recs {
		var m map[string]any
		_ = json.Unmarshal(r.Data, &m)
		out = append(out, m)
	}
	return out
}

// TestRateLimitPause: at the limit, the call is refused and the agent is
// paused (audited, by the limit), the person is told once; another agent
// goes on; after the resume the agent is still at its limit.
func TestRateLimitPause(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	var mu sync.Mutex
	var notices []kernel.Notice
	k.OnNotice(func(n kernel.Notice) { mu.Lock(); notices = append(notices, n); mu.Unlock() })
	l := limit("", 3, usage.Pause)
	l.Tool = "Read"
	l, err := k.PutRateLimit(ctx, l, "ann")
	if err != nil || !strings.HasPrefix(l.ID, "rl_") {
		t.Fatalf("put: %+v %v", l, err)
	}
	for i := 0; i < 3; i++ {
		if sub, err := k.Submit(ctx, read("codex")); err != nil || sub.Verdict.Level != action.Auto {
			t.Fatalf("call %d: %v %v", i+1, sub.Verdict.Summary(), err)
		}
	}
	sub, err := k.Submit(ctx, read("codex"))
	if err != nil || sub.Verdict.Level != action.Block || !sub.Verdict.Stop || !strings.Contains(sub.Verdict.Summary(), "rate limit "+l.ID) {
		t.Fatalf("at the limit: %s (%v)", sub.Verdict.Summary(), err)
	}
	p, ok := k.AgentPause("codex")
	if !ok || p.By != "rate-limit "+l.ID || !strings.Contains(p.Reason, "3 within 1h0m0s") {
		t.Fatalf("pause %+v %v", p, ok)
	}
	// Paused: the next call says so.
	if sub, _ := k.Submit(ctx, read("codex")); !strings.Contains(sub.Verdict.Summary(), "overseer resume-agent codex") {
		t.Fatalf("paused: %s", sub.Verdict.Summary())
	}
	if sub, _ := k.Submit(ctx, read("claude-code")); sub.Verdict.Level != action.Auto {
		t.Fatalf("another agent: %s", sub.Verdict.Summary())
	}
	al := alerts(t, k)
	if len(al) != 1 || al[0]["alert"] != "rate_limit" || al[0]["id"] != l.ID {
		t.Fatalf("alerts %v", al)
	}
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	if len(notices) != 1 || notices[0].Agent != "codex" {
		t.Errorf("notices %+v", notices)
	}
	mu.Unlock()
	// Resumed, it is still at its limit: paused again by the next call.
	if err := k.ResumeAgent(ctx, "codex", "ann"); err != nil {
		t.Fatal(err)
	}
	if sub, _ := k.Submit(ctx, read("codex")); sub.Verdict.Level != action.Block {
		t.Fatalf("after the resume, at the limit: %s", sub.Verdict.Summary())
	}
	// Raising the limit lets it go on (after a person resumes it).
	l.MaxCalls = 100
	if _, err := k.PutRateLimit(ctx, l, "ann"); err != nil {
		t.Fatal(err)
	}
	if err := k.ResumeAgent(ctx, "codex", "ann"); err != nil {
		t.Fatal(err)
	}
	if sub, _ := k.Submit(ctx, read("codex")); sub.Verdict.Level != action.Auto {
		t.Fatalf("after raising the limit: %s", sub.Verdict.Summary())
	}
	types := strings.Join(auditTypes(t, k), ",")
	for _, want := range []string{kernel.TypeControlChange, kernel.TypeAgentPaused, kernel.TypeAgentResumed} {
		if !strings.Contains(types, want) {
			t.Errorf("no %s record in %s", want, types)
		}
	}
}

func TestRateLimitBlockAndAsk(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	blk := limit("blk", 2, usage.Block)
	blk.Agent = "codex"
	ask := limit("ask", 2, usage.Ask)
	ask.Agent = "gemini"
	note := limit("note", 1, usage.NotifyOnly)
	note.Agent = "claude-code"
	for _, l := range []usage.RateLimit{blk, ask, note} {
		if _, err := k.PutRateLimit(ctx, l, "ann"); err != nil {
			t.Fatal(err)
		}
	}
	run := func(agent string) action.Verdict {
		sub, err := k.Submit(ctx, read(agent))
		if err != nil {
			t.Fatal(err)
		}
		return sub.Verdict
	}
	run("codex")
	run("codex")
	if v := run("codex"); v.Level != action.Block || v.Stop {
		t.Fatalf("block: %s stop=%v", v.Summary(), v.Stop)
	}
	if p, _ := k.AgentPaused("codex"); p {
		t.Fatal("block paused the agent")
	}
	run("gemini")
	run("gemini")
	sub, err := k.Submit(ctx, read("gemini"))
	if err != nil || sub.Verdict.Level != action.Approve || sub.Approval == nil || sub.Verdict.Preview == nil ||
		!strings.Contains(sub.Verdict.Preview.Summary+strings.Join(sub.Verdict.Preview.Items, " "), "2 within 1h0m0s") {
		t.Fatalf("ask: %+v (%v)", sub.Verdict, err)
	}
	run("claude-code")
	if v := run("claude-code"); v.Level != action.Notify {
		t.Fatalf("notify_only: %s", v.Summary())
	}
	// An evaluation counts nothing.
	for i := 0; i < 5; i++ {
		a := read("other")
		if v := k.Evaluate(ctx, a); v.Level != action.Auto {
			t.Fatalf("evaluate: %s", v.Summary())
		}
	}
}

// TestCountsSurviveReopen: the counts are written behind and read by the
// next kernel on the same home (another process, or a restart).
func TestCountsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	if _, err := k.PutRateLimit(ctx, limit("rl", 2, usage.Block), "ann"); err != nil {
		t.Fatal(err)
	}
	k.Submit(ctx, read("codex"))
	k.Submit(ctx, read("codex"))
	k.RecordUse(ctx, kernel.Use{Agent: "codex", Session: "s1", Model: "gpt-4o", Input: 1_000_000, Output: 100_000})
	if err := k.FlushUsage(ctx); err != nil {
		t.Fatal(err)
	}
	k2, err := kernel.Open(ctx, kernel.Config{Home: k.Home})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	if sub, _ := k2.Submit(ctx, read("codex")); sub.Verdict.Level != action.Block {
		t.Fatalf("the other kernel does not see the counts: %s", sub.Verdict.Summary())
	}
	var cost float64
	for _, sp := range k2.SpendRows() {
		cost += sp.Cost
	}
	if cost < 3.49 || cost > 3.51 { // 2.5 + 1.0 at the default gpt-4o price
		t.Fatalf("spend %v", cost)
	}
}

func TestBudgetStopAndAlerts(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	cp, err := k.PutBudgetCap(ctx, usage.BudgetCap{Scope: usage.ScopeAgent, ScopeID: "codex", MaxCostUSD: 1, Period: usage.Daily,
		Action: usage.Stop, Enabled: true}, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if err := k.SetPrices(ctx, usage.Prices{"m": {InputPerMTok: 1, OutputPerMTok: 1}}, "ann"); err != nil {
		t.Fatal(err)
	}
	// Cumulative reports: only what is new counts.
	for _, tot := range []int64{500_000, 500_000, 850_000} {
		k.RecordReported(ctx, kernel.Use{Agent: "codex", Session: "s1", Model: "m", Input: tot})
	}
	if st := k.Budgets(); len(st) != 1 || st[0].Spent < 0.849 || st[0].Spent > 0.851 {
		t.Fatalf("budgets %+v", st)
	}
	if sub, _ := k.Submit(ctx, read("codex")); sub.Verdict.Level != action.Auto {
		t.Fatalf("under the cap: %s", sub.Verdict.Summary())
	}
	k.RecordReported(ctx, kernel.Use{Agent: "codex", Session: "s1", Model: "m", Input: 1_100_000})
	sub, _ := k.Submit(ctx, read("codex"))
	if sub.Verdict.Level != action.Block || !sub.Verdict.Stop || !strings.Contains(sub.Verdict.Summary(), "budget cap "+cp.ID) {
		t.Fatalf("over the cap: %s", sub.Verdict.Summary())
	}
	if sub, _ := k.Submit(ctx, read("claude-code")); sub.Verdict.Level != action.Auto {
		t.Fatalf("another agent: %s", sub.Verdict.Summary())
	}
	var shares []string
	for _, a := range alerts(t, k) {
		shares = append(shares, fmt.Sprint(a["share"]))
	}
	if strings.Join(shares, ",") != "0.8,1" {
		t.Fatalf("alerts at %v, want 0.8 and 1", shares)
	}
	if st := k.BudgetFor("codex", "s1"); st.Stop == "" {
		t.Fatalf("BudgetFor: %+v", st)
	}
	if err := k.DeleteBudgetCap(ctx, cp.ID, "ann"); err != nil {
		t.Fatal(err)
	}
	if sub, _ := k.Submit(ctx, read("codex")); sub.Verdict.Level != action.Auto {
		t.Fatalf("after removing the cap: %s", sub.Verdict.Summary())
	}
	if err := k.DeleteBudgetCap(ctx, cp.ID, "ann"); err == nil {
		t.Fatal("removed twice")
	}
}
