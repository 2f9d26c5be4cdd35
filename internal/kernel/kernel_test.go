package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

func open(t *testing.T, clk clock.Clock, policyYAML string) *kernel.Kernel {
	t.Helper()
	home := t.TempDir()
	if policyYAML != "" {
		if err := os.WriteFile(filepath.Join(home, kernel.PolicyName), []byte(policyYAML), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k, err := kernel.Open(context.Background(), kernel.Config{Home: home, Clock: clk, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func write(path string) *action.Action {
	return &action.Action{Tool: "Write", Agent: "t", Session: "s1", Cwd: "/proj",
		Args: map[string]any{"file_path": path, "content": "x"}}
}

func auditTypes(t *testing.T, k *kernel.Kernel) []string {
	t.Helper()
	recs, err := k.Store.QueryAudit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range recs {
		if r.Type == audit.TypeSeal || r.Type == audit.TypeSealStart {
			continue // the log's own (see TestSealMarkers)
		}
		types = append(types, r.Type)
	}
	return types
}

func TestSubmitRecordsAndAsks(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	sub, err := k.Submit(ctx, write("/proj/a.go"))
	if err != nil {
		t.Fatal(err)
	}
	if sub.Verdict.Level != action.Notify || sub.Approval != nil {
		t.Fatalf("in-tree write: %s, approval %v", sub.Verdict.Level, sub.Approval)
	}
	sub, err = k.Submit(ctx, write("/etc/hosts"))
	if err != nil {
		t.Fatal(err)
	}
	if sub.Verdict.Level != action.Confirm || sub.Approval == nil || sub.Approval.Status != store.StatusPending {
		t.Fatalf("write elsewhere: %s, approval %+v", sub.Verdict.Level, sub.Approval)
	}
	done := make(chan *store.Approval, 1)
	go func() {
		apr, err := k.Wait(ctx, sub.Approval.ID)
		if err != nil {
			t.Error(err)
		}
		done <- apr
	}()
	apr, applied, err := k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "deny", Who: "ann", Channel: "test", Reason: "not there"})
	if err != nil || !applied {
		t.Fatalf("answer: applied=%v err=%v", applied, err)
	}
	if got := <-done; got.Status != store.StatusDenied || got.Answer.Reason != "not there" {
		t.Fatalf("waiter got %+v", got)
	}
	if _, applied, _ = k.Answer(ctx, apr.ID, store.Answer{Decision: "approve", Who: "bob", Channel: "test"}); applied {
		t.Fatal("a second answer was applied")
	}
	want := "action verdict action verdict approval_request answer answer"
	if got := strings.Join(auditTypes(t, k), " "); got != want {
		t.Fatalf("audit types:\n got %s\nwant %s", got, want)
	}
	rep, err := audit.Verify(ctx, k.Store)
	if err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

func TestAnswerRecordsWhoAndChannel(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	sub, err := k.Submit(ctx, write("/etc/x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "web"}); err != nil {
		t.Fatal(err)
	}
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeAnswer}})
	if err != nil || len(recs) != 1 {
		t.Fatalf("answer records: %d %v", len(recs), err)
	}
	var rec struct {
		ApprovalID string       `json:"approval_id"`
		Answer     store.Answer `json:"answer"`
	}
	if err := json.Unmarshal(recs[0].Data, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.ApprovalID != sub.Approval.ID || rec.Answer.Who != "ann" || rec.Answer.Channel != "web" || rec.Answer.At.IsZero() {
		t.Fatalf("answer record: %+v", rec)
	}
}

func TestTimeoutAppliesDefaultAndIsAudited(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	k := open(t, clk, "version: 1\nsettings: {approvals: {timeout: 1m}}\n")
	sub, err := k.Submit(ctx, write("/etc/x"))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	n, err := k.Gate.ExpireDue(ctx)
	if err != nil || n != 1 {
		t.Fatalf("expire: %d %v", n, err)
	}
	apr, err := k.Gate.Get(ctx, sub.Approval.ID)
	if err != nil {
		t.Fatal(err)
	}
	if apr.Status != store.StatusExpired || apr.Answer.Decision != "deny" || apr.Answer.Who != "timeout" {
		t.Fatalf("after timeout: %+v %+v", apr.Status, apr.Answer)
	}
	if got := auditTypes(t, k); got[len(got)-1] != audit.TypeAnswer {
		t.Fatalf("the timeout was not audited: %v", got)
	}
}

func TestRememberSession(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	sub, err := k.Submit(ctx, write("/etc/x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "test", Remember: "session"}); err != nil {
		t.Fatal(err)
	}
	again, err := k.Submit(ctx, write("/etc/x"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Verdict.Level != action.Notify || again.Approval != nil {
		t.Fatalf("same call, same session: %s (%s)", again.Verdict.Level, again.Verdict.Summary())
	}
	other := write("/etc/x")
	other.Session = "s2"
	if v := k.Evaluate(ctx, other); v.Level != action.Confirm {
		t.Fatalf("same call, other session: %s", v.Level)
	}
	if v := k.Evaluate(ctx, write("/etc/y")); v.Level != action.Confirm {
		t.Fatalf("other arguments, same session: %s", v.Level)
	}
	hist, err := k.PolicyHistory(ctx, 0)
	if err != nil || len(hist) != 1 {
		t.Fatalf("policy history: %d %v", len(hist), err)
	}
}

func TestRememberRuleAndRemove(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	sub, err := k.Submit(ctx, write("/etc/x"))
	if err != nil {
		t.Fatal(err)
	}
	rule := `{"name":"etc-writes-block","kind":["file_write"],"when":"args.file_path.startsWith(\"/etc/\")","level":"block"}`
	if _, _, err := k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "deny", Who: "ann", Channel: "test",
		Remember: "rule", Rule: json.RawMessage(rule)}); err != nil {
		t.Fatal(err)
	}
	if v := k.Evaluate(ctx, write("/etc/other")); v.Level != action.Block || v.Decider.Name != "etc-writes-block" {
		t.Fatalf("after remembering a rule: %s by %+v", v.Level, v.Decider)
	}
	if err := k.RemoveUserRule(ctx, "etc-writes-block", "ann"); err != nil {
		t.Fatal(err)
	}
	if v := k.Evaluate(ctx, write("/etc/other")); v.Level != action.Confirm {
		t.Fatalf("after removing the rule: %s", v.Level)
	}
	// An invalid rule is refused and nothing is saved.
	sub, _ = k.Submit(ctx, write("/etc/z"))
	_, applied, err := k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "test",
		Remember: "rule", Rule: json.RawMessage(`{"name":"x","level":"sometimes"}`)})
	if err == nil {
		t.Fatal("an invalid remembered rule was accepted")
	}
	if !applied {
		t.Fatal("the answer itself should still apply")
	}
	rules, _ := k.Store.ListUserRules(ctx, time.Now())
	if len(rules) != 0 {
		t.Fatalf("user rules after an invalid one: %d", len(rules))
	}
}

func TestAdaptiveEscalationThroughAnswers(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	for i := 0; i < 3; i++ {
		sub, err := k.Submit(ctx, &action.Action{Tool: "deploy", Session: "s", Args: map[string]any{"n": i}})
		if err != nil {
			t.Fatal(err)
		}
		if sub.Approval == nil {
			t.Fatalf("deploy #%d needed no person", i)
		}
		if _, _, err := k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "deny", Who: "ann", Channel: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	v := k.Evaluate(ctx, &action.Action{Tool: "deploy", Args: map[string]any{"n": 9}})
	if v.Level != action.Approve || v.Decider.Source != action.SourceAdaptive {
		t.Fatalf("after three rejections: %s by %+v", v.Level, v.Decider)
	}
	hist, err := k.PolicyHistory(ctx, 0)
	if err != nil || len(hist) != 1 {
		t.Fatalf("history: %d %v", len(hist), err)
	}
	var pc kernel.PolicyChange
	if err := json.Unmarshal(hist[0].Data, &pc); err != nil {
		t.Fatal(err)
	}
	if pc.Origin != "adaptive" || pc.Tool != "deploy" || pc.Before != action.Confirm || pc.After != action.Approve || pc.Reason == "" {
		t.Fatalf("policy change record: %+v", pc)
	}
}

// TestWithdrawnRequestsTeachNothing: requests withdrawn because their asker
// went away are recorded as withdrawn, and however many there are, they
// neither escalate the tool nor count as rejections.
func TestWithdrawnRequestsTeachNothing(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	for i := 0; i < 4; i++ {
		sub, err := k.SubmitBy(ctx, &action.Action{Tool: "deploy", Session: "s", Args: map[string]any{"n": i}},
			&store.Asker{Kind: "hook", Hold: true})
		if err != nil {
			t.Fatal(err)
		}
		if sub.Approval == nil || sub.Approval.Asker == nil || sub.Approval.Asker.Kind != "hook" {
			t.Fatalf("deploy #%d: %+v", i, sub.Approval)
		}
		got, applied, err := k.Withdraw(ctx, sub.Approval.ID, "the agent's hook is gone")
		if err != nil || !applied || got.Status != store.StatusWithdrawn {
			t.Fatalf("withdraw: %v %v %+v", err, applied, got)
		}
	}
	v := k.Evaluate(ctx, &action.Action{Tool: "deploy", Args: map[string]any{"n": 9}})
	if v.Level != action.Confirm || v.Decider.Source == action.SourceAdaptive {
		t.Fatalf("after four withdrawals: %s by %+v", v.Level, v.Decider)
	}
	if hist, err := k.PolicyHistory(ctx, 0); err != nil || len(hist) != 0 {
		t.Fatalf("history: %d %v", len(hist), err)
	}
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeAnswer}})
	if err != nil || len(recs) != 4 || !strings.Contains(string(recs[0].Data), `"status":"withdrawn"`) {
		t.Fatalf("answer records: %d %v", len(recs), err)
	}
}

func TestSubmitFailsClosedWhenStoreFails(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	k.Store.Close()
	if sub, err := k.Submit(ctx, write("/proj/a.go")); err == nil {
		t.Fatalf("Submit succeeded on a closed store: %+v", sub.Verdict)
	}
}

func TestBadPolicyFileRefusesToStart(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, kernel.PolicyName), []byte("version: 1\nrules: [{name: x, level: often}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := kernel.Open(context.Background(), kernel.Config{Home: home}); err == nil || !strings.Contains(err.Error(), "policy.yaml:2") {
		t.Fatalf("Open with a bad policy: %v", err)
	}
}

// The built-in policy with the real guards: what issue examples promise.
func TestBuiltinPolicyWithGuards(t *testing.T) {
	k := open(t, nil, "")
	cwd := t.TempDir()
	tests := []struct {
		tool string
		args map[string]any
		want action.Level
	}{
		{"Bash", map[string]any{"command": "rm -rf /"}, action.Block},
		{"Bash", map[string]any{"command": "ls && rm -rf ~"}, action.Block},
		{"Bash", map[string]any{"command": "rm -rf /tmp/overseer-test-build"}, action.Approve},
		{"Bash", map[string]any{"command": "rm -rf build"}, action.Notify},
		{"Bash", map[string]any{"command": "rm *.log"}, action.Approve},
		{"Bash", map[string]any{"command": "git status && git log --oneline | head"}, action.Auto},
		{"Bash", map[string]any{"command": "go test ./..."}, action.Notify},
		{"Bash", map[string]any{"command": "git push origin main"}, action.Approve},
		{"Bash", map[string]any{"command": "mkfs.ext4 /dev/does-not-exist"}, action.Block},
		{"WebFetch", map[string]any{"url": "http://0x7f.1/"}, action.Block},
		{"sql_query", map[string]any{"sql": "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d"}, action.Block},
		{"sql_query", map[string]any{"sql": "SELECT 1"}, action.Auto},
		{"Read", map[string]any{"file_path": filepath.Join(k.Home, "token")}, action.Block},
		{"Write", map[string]any{"file_path": "main.go", "content": "x"}, action.Notify},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+fmt.Sprint(tt.args), func(t *testing.T) {
			v := k.Evaluate(context.Background(), &action.Action{Tool: tt.tool, Args: tt.args, Cwd: cwd})
			if v.Level != tt.want {
				t.Fatalf("%s, want %s (%s)", v.Level, tt.want, v.Summary())
			}
		})
	}
}
