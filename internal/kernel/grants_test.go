package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// docsGrant is the end-to-end test's grant: reads under /proj/docs for
// Claude Code's general-purpose sub-agents of session s1, three steps.
func docsGrant(now time.Time) kernel.GrantSpec {
	return kernel.GrantSpec{
		Subject: grant.Subject{Agent: "claude-code", Session: "s1", SubagentType: "general-purpose"},
		Allow:   []grant.Permit{{Kinds: []action.Kind{action.KindFileRead}, Under: []string{"/proj/docs"}, ReadOnly: true}},
		Budget:  grant.Budget{Steps: 3},
		Expires: now.Add(time.Hour),
	}
}

func subRead(path string) *action.Action {
	return &action.Action{Agent: "claude-code", Session: "s1", SubagentID: "a1", SubagentType: "general-purpose",
		Tool: "Read", Cwd: "/proj", Args: map[string]any{"file_path": path}}
}

func submit(t *testing.T, k *kernel.Kernel, a *action.Action) action.Verdict {
	t.Helper()
	sub, err := k.Submit(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	return sub.Verdict
}

func hasReason(v action.Verdict, prefix string) bool {
	for _, r := range v.Reasons {
		if r.Source == action.SourceGrant && strings.HasPrefix(r.Name, prefix) {
			return true
		}
	}
	return false
}

// A read-only grant over docs/ with a shell write: shell commands are
// confirm by the built-in policy, reads of the tree run anyway; the grant
// is seen by the rule that makes a read elsewhere ask.
const grantPolicy = `version: 1
rules:
  - name: reads-outside-docs-ask
    kind: file_read
    when: '!args.file_path.startsWith("/proj/docs/")'
    level: confirm
  - name: admin-blocks-secret
    kind: file_read
    when: 'args.file_path == "/proj/docs/secret.md"'
    level: block
`

func TestGrantInsideEdgeBudgetRevoke(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	k := open(t, clk, "")
	g, err := k.IssueGrant(ctx, docsGrant(clk.Now()), "alice", "cli")
	if err != nil {
		t.Fatal(err)
	}
	// A write of the sub-agent is outside: a person decides.
	w := subRead("/proj/docs/a.md")
	w.Tool, w.Args = "Write", map[string]any{"file_path": "/proj/src/x.go", "content": "x"}
	if v := submit(t, k, w); v.Level < action.Confirm || !hasReason(v, firewall.GrantEdgePrefix) {
		t.Fatalf("write outside: %s %+v", v.Level, v.Reasons)
	}
	// A read elsewhere is outside too, though the policy alone lets reads run.
	if v := submit(t, k, subRead("/proj/src/main.go")); v.Level < action.Confirm || !hasReason(v, firewall.GrantEdgePrefix) {
		t.Fatalf("read elsewhere: %s %+v", v.Level, v.Reasons)
	}
	// The main agent is not the subject: the policy alone judges it.
	main := subRead("/proj/src/main.go")
	main.SubagentID, main.SubagentType = "", ""
	if v := submit(t, k, main); v.Level != action.Auto || hasReason(v, "grant") {
		t.Fatalf("main agent: %s %+v", v.Level, v.Reasons)
	}
	// Three reads inside run, the fourth is at the edge (budget).
	for i := 0; i < 3; i++ {
		v := submit(t, k, subRead(fmt.Sprintf("/proj/docs/%d.md", i)))
		if v.Level != action.Auto || firewall.InsideGrant(&v) != g.ID {
			t.Fatalf("read %d: %s %+v", i, v.Level, v.Reasons)
		}
	}
	v := submit(t, k, subRead("/proj/docs/a.md"))
	if v.Level != action.Confirm || !strings.Contains(v.Decider.Message, "budget of 3 steps") {
		t.Fatalf("after the budget: %s %+v", v.Level, v.Decider)
	}
	views, err := k.ListGrants(ctx, false)
	if err != nil || len(views) != 1 || views[0].Usage.Steps != 3 || views[0].Active {
		t.Fatalf("list: %+v %v", views, err)
	}

	// A second grant, revoked: the next call is at the edge at once.
	g2, err := k.IssueGrant(ctx, docsGrant(clk.Now()), "alice", "cli")
	if err != nil {
		t.Fatal(err)
	}
	if v := submit(t, k, subRead("/proj/docs/b.md")); firewall.InsideGrant(&v) != g2.ID {
		t.Fatalf("second grant: %+v", v.Reasons)
	}
	if _, err := k.RevokeGrant(ctx, g2.ID, "bob", "web", "enough"); err != nil {
		t.Fatal(err)
	}
	v = submit(t, k, subRead("/proj/docs/b.md"))
	if v.Level != action.Confirm || !strings.Contains(v.Decider.Message, "revoked by bob") {
		t.Fatalf("after revocation: %s %+v", v.Level, v.Decider)
	}
	// A day after the end the grants are forgotten: the policy alone.
	clk.Advance(grant.Remembered + 2*time.Hour)
	if v := submit(t, k, subRead("/proj/docs/b.md")); v.Level != action.Auto || hasReason(v, "grant") {
		t.Fatalf("forgotten: %s %+v", v.Level, v.Reasons)
	}
}

func TestGrantKeepsAdminFloorAndHardGuards(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	k := open(t, clk, grantPolicy)
	spec := docsGrant(clk.Now())
	spec.Budget = grant.Budget{}
	spec.Allow = []grant.Permit{{Kinds: []action.Kind{action.KindFileRead, action.KindFileWrite, action.KindShell}}}
	if _, err := k.IssueGrant(ctx, spec, "alice", "cli"); err != nil {
		t.Fatal(err)
	}
	// The admin rule still decides.
	if v := submit(t, k, subRead("/proj/docs/secret.md")); v.Level != action.Block {
		t.Fatalf("admin block inside a grant: %s", v.Level)
	}
	if v := submit(t, k, subRead("/proj/src/x.go")); v.Level != action.Confirm {
		t.Fatalf("admin confirm inside a grant: %s", v.Level)
	}
	// Overseer's own home (L4) and hard guards still hold.
	own := subRead(k.Home + "/token")
	if v := submit(t, k, own); v.Level != action.Block {
		t.Fatalf("own home inside a grant: %s", v.Level)
	}
	sh := subRead("")
	sh.Tool, sh.Args = "Bash", map[string]any{"command": "rm -rf /"}
	if v := submit(t, k, sh); v.Level != action.Block {
		t.Fatalf("rm -rf / inside a grant: %s", v.Level)
	}
	// A write the grant allows runs without a person.
	w := subRead("")
	w.Tool, w.Args = "Write", map[string]any{"file_path": "/proj/docs/new.md", "content": "x"}
	// (The built-in admin rule on writes in the working directory says
	// notify: it still applies, and runs without a person.)
	if v := submit(t, k, w); v.Level != action.Notify || firewall.InsideGrant(&v) == "" {
		t.Fatalf("granted write: %s %+v", v.Level, v.Reasons)
	}
}

func TestChildGrantNeverExceedsParent(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	k := open(t, clk, "")
	parentSpec := docsGrant(clk.Now())
	parentSpec.Subject.SubagentType = "*"
	parentSpec.Budget.Steps = 10
	p, err := k.IssueGrant(ctx, parentSpec, "alice", "cli")
	if err != nil {
		t.Fatal(err)
	}
	child := docsGrant(clk.Now())
	child.Budget.Steps = 2
	for name, mut := range map[string]func(s *kernel.GrantSpec){
		"wider path":    func(s *kernel.GrantSpec) { s.Allow[0].Under = []string{"/proj"} },
		"writes":        func(s *kernel.GrantSpec) { s.Allow[0].ReadOnly = false },
		"more kinds":    func(s *kernel.GrantSpec) { s.Allow[0].Kinds = append(s.Allow[0].Kinds, action.KindShell) },
		"more steps":    func(s *kernel.GrantSpec) { s.Budget.Steps = 11 },
		"no step limit": func(s *kernel.GrantSpec) { s.Budget.Steps = 0 },
		"later expiry":  func(s *kernel.GrantSpec) { s.Expires = s.Expires.Add(time.Minute) },
		"other session": func(s *kernel.GrantSpec) { s.Subject.Session = "s2" },
		"main agent":    func(s *kernel.GrantSpec) { s.Subject.SubagentType = "" },
	} {
		c := child
		c.Allow = []grant.Permit{{Kinds: []action.Kind{action.KindFileRead}, Under: []string{"/proj/docs/api"}, ReadOnly: true}}
		mut(&c)
		if _, err := k.IssueChildGrant(ctx, p.ID, c); !errors.Is(err, grant.ErrExceeds) {
			t.Errorf("%s: %v", name, err)
		}
	}
	child.Allow = []grant.Permit{{Kinds: []action.Kind{action.KindFileRead}, Under: []string{"/proj/docs/api"}, ReadOnly: true}}
	c, err := k.IssueChildGrant(ctx, p.ID, child)
	if err != nil {
		t.Fatal(err)
	}
	if v := submit(t, k, subRead("/proj/docs/api/x.md")); firewall.InsideGrant(&v) != c.ID {
		t.Fatalf("child: %+v", v.Reasons)
	}
	// The child's use is the parent's too.
	pv, err := k.GetGrant(ctx, p.ID)
	if err != nil || pv.Usage.Steps != 1 {
		t.Fatalf("parent use: %+v %v", pv, err)
	}
	// Revoking the parent revokes the child at once.
	if _, err := k.RevokeGrant(ctx, p.ID, "alice", "cli", "done"); err != nil {
		t.Fatal(err)
	}
	cv, err := k.GetGrant(ctx, c.ID)
	if err != nil || cv.Revoked == nil || cv.Active {
		t.Fatalf("child after the parent's revocation: %+v %v", cv, err)
	}
	if v := submit(t, k, subRead("/proj/docs/api/x.md")); v.Level != action.Confirm {
		t.Fatalf("after revocation: %s", v.Level)
	}
	// A revoked parent gives no more children.
	if _, err := k.IssueChildGrant(ctx, p.ID, child); !errors.Is(err, grant.ErrInactive) {
		t.Fatalf("child of a revoked grant: %v", err)
	}
}

func TestGrantUnreadableUseIsNoGrant(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	k := open(t, clk, grantPolicy)
	spec := docsGrant(clk.Now())
	spec.Allow[0].Under = []string{"/proj"}
	g, err := k.IssueGrant(ctx, spec, "alice", "cli")
	if err != nil {
		t.Fatal(err)
	}
	// A count that is not JSON of a usage: the grant cannot be used.
	if err := k.Raw().UpdateState(ctx, "grant_use", g.ID, func([]byte) ([]byte, error) { return []byte(`"broken"`), nil }); err != nil {
		t.Fatal(err)
	}
	v := submit(t, k, subRead("/proj/src/x.go"))
	if firewall.InsideGrant(&v) != "" || v.Level != action.Confirm {
		t.Fatalf("unreadable use: %s %+v", v.Level, v.Reasons)
	}
}

func TestIssueGrantValidates(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	k := open(t, clk, "")
	for name, mut := range map[string]func(s *kernel.GrantSpec){
		"no agent":       func(s *kernel.GrantSpec) { s.Subject.Agent = "" },
		"agent pattern":  func(s *kernel.GrantSpec) { s.Subject.Agent = "claude*" },
		"no permits":     func(s *kernel.GrantSpec) { s.Allow = nil },
		"empty permit":   func(s *kernel.GrantSpec) { s.Allow = []grant.Permit{{Under: []string{"/x"}}} },
		"relative dir":   func(s *kernel.GrantSpec) { s.Allow[0].Under = []string{"docs"} },
		"bad kind":       func(s *kernel.GrantSpec) { s.Allow[0].Kinds = []action.Kind{"sudo"} },
		"no expiry":      func(s *kernel.GrantSpec) { s.Expires = time.Time{} },
		"past expiry":    func(s *kernel.GrantSpec) { s.Expires = clk.Now().Add(-time.Second) },
		"too long":       func(s *kernel.GrantSpec) { s.Expires = clk.Now().Add(grant.MaxLife + time.Hour) },
		"negative":       func(s *kernel.GrantSpec) { s.Budget.Steps = -1 },
		"unknown parent": func(s *kernel.GrantSpec) { s.Parent = "grt_nothere" },
	} {
		s := docsGrant(clk.Now())
		s.Allow = []grant.Permit{{Kinds: []action.Kind{action.KindFileRead}, Under: []string{"/proj/docs"}}}
		mut(&s)
		if _, err := k.IssueGrant(ctx, s, "alice", "cli"); err == nil {
			t.Errorf("%s: issued", name)
		}
	}
	if _, err := k.IssueGrant(ctx, docsGrant(clk.Now()), "", "cli"); err == nil {
		t.Error("issued without a name")
	}
	if views, err := k.ListGrants(ctx, false); err != nil || len(views) != 0 {
		t.Fatalf("grants: %+v %v", views, err)
	}
}

func TestGrantTokenBudget(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	k := open(t, clk, "")
	spec := kernel.GrantSpec{
		Subject: grant.Subject{Agent: "overseer", Session: "task-1"},
		Allow:   []grant.Permit{{Kinds: []action.Kind{action.KindFileRead}}},
		Budget:  grant.Budget{Tokens: 1000, CostUSD: 0.5},
		Expires: clk.Now().Add(time.Hour),
	}
	g, err := k.IssueGrant(ctx, spec, "alice", "cli")
	if err != nil {
		t.Fatal(err)
	}
	caller := &action.Action{Agent: "overseer", Session: "task-1"}
	read := func() action.Verdict {
		return submit(t, k, &action.Action{Agent: "overseer", Session: "task-1", Tool: "file_read", Cwd: "/proj",
			Args: map[string]any{"file_path": fmt.Sprintf("/proj/%d", time.Now().UnixNano())}})
	}
	if v := read(); firewall.InsideGrant(&v) != g.ID {
		t.Fatalf("before: %+v", v.Reasons)
	}
	if err := k.ChargeCaller(ctx, caller, 999, 0.1); err != nil {
		t.Fatal(err)
	}
	if v := read(); firewall.InsideGrant(&v) != g.ID {
		t.Fatalf("999 tokens: %+v", v.Reasons)
	}
	if err := k.ChargeCaller(ctx, caller, 1, 0); err != nil {
		t.Fatal(err)
	}
	if v := read(); v.Level != action.Confirm || !strings.Contains(v.Decider.Message, "budget of 1000 tokens") {
		t.Fatalf("after the tokens: %s %+v", v.Level, v.Decider)
	}
	gv, _ := k.GetGrant(ctx, g.ID)
	if gv.Usage.Tokens != 1000 || gv.Usage.Steps != 2 {
		t.Fatalf("use %+v", gv.Usage)
	}
}

// A grant record that cannot be read means no grant at all: every call is
// judged by the policy alone (with a reason saying so), never let through
// by a grant.
func TestMalformedGrantRecordIsNoGrant(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	k := open(t, clk, grantPolicy)
	spec := docsGrant(clk.Now())
	spec.Allow[0].Under = []string{"/proj"}
	if _, err := k.IssueGrant(ctx, spec, "alice", "cli"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Audit.Append(ctx, audit.Entry{Type: kernel.TypeGrant, Data: map[string]any{"op": "widen", "id": "x"}}); err != nil {
		t.Fatal(err)
	}
	v := submit(t, k, subRead("/proj/src/x.go"))
	if firewall.InsideGrant(&v) != "" || v.Level != action.Confirm || !hasReason(v, "grant-unreadable") {
		t.Fatalf("with a malformed grant record: %s %+v", v.Level, v.Reasons)
	}
	if _, err := k.ListGrants(ctx, false); err == nil {
		t.Fatal("the grants listed despite a malformed record")
	}
}

// TestSubTaskGrantNeverExceedsParent: the own loop carves a sub-task's
// grant out of its task's (a main agent's grant): the child's subject is
// one sub-task in the task's session; everything else lies within the
// parent. A person cannot use the sub-task rule, and the task's own calls
// are never inside the child.
func TestSubTaskGrantNeverExceedsParent(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	k := open(t, clk, "")
	parentSpec := docsGrant(clk.Now())
	parentSpec.Subject = grant.Subject{Agent: "overseer"}
	parentSpec.Budget.Steps = 10
	p, err := k.IssueGrant(ctx, parentSpec, "alice", "cli")
	if err != nil {
		t.Fatal(err)
	}
	child := docsGrant(clk.Now())
	child.Subject = grant.Subject{Agent: "overseer", Session: "t1", SubagentType: grant.SubTaskType, SubagentID: "t2"}
	child.Budget.Steps = 2
	for name, mut := range map[string]func(s *kernel.GrantSpec){
		"wider path":       func(s *kernel.GrantSpec) { s.Allow[0].Under = []string{"/proj"} },
		"more steps":       func(s *kernel.GrantSpec) { s.Budget.Steps = 11 },
		"no step limit":    func(s *kernel.GrantSpec) { s.Budget.Steps = 0 },
		"later expiry":     func(s *kernel.GrantSpec) { s.Expires = s.Expires.Add(time.Minute) },
		"another agent":    func(s *kernel.GrantSpec) { s.Subject.Agent = "claude-code" },
		"any sub-agent":    func(s *kernel.GrantSpec) { s.Subject.SubagentType = "*" },
		"no sub-task id":   func(s *kernel.GrantSpec) { s.Subject.SubagentID = "" },
		"any session":      func(s *kernel.GrantSpec) { s.Subject.Session = "" },
		"other agent type": func(s *kernel.GrantSpec) { s.Subject.SubagentType = "general-purpose" },
	} {
		c := child
		c.Allow = []grant.Permit{{Kinds: []action.Kind{action.KindFileRead}, Under: []string{"/proj/docs"}, ReadOnly: true}}
		mut(&c)
		if _, err := k.IssueChildGrant(ctx, p.ID, c); !errors.Is(err, grant.ErrExceeds) {
			t.Errorf("%s: %v", name, err)
		}
	}
	child.Allow = []grant.Permit{{Kinds: []action.Kind{action.KindFileRead}, Under: []string{"/proj/docs"}, ReadOnly: true}}
	// A person nesting by hand keeps the plain rule: a sub-task's subject
	// is not among a main agent's.
	spec := child
	spec.Parent = p.ID
	if _, err := k.IssueGrant(ctx, spec, "alice", "cli"); !errors.Is(err, grant.ErrExceeds) {
		t.Fatalf("a person's sub-task grant under a main agent's: %v", err)
	}
	c, err := k.IssueChildGrant(ctx, p.ID, child)
	if err != nil {
		t.Fatal(err)
	}
	read := func(sub bool) *action.Action {
		a := &action.Action{Agent: "overseer", Session: "t1", Tool: "file_read", Kind: action.KindFileRead, Cwd: "/proj",
			Args: map[string]any{"file_path": "/proj/docs/x.md"}}
		if sub {
			a.SubagentType, a.SubagentID = grant.SubTaskType, "t2"
		}
		return a
	}
	if v := submit(t, k, read(true)); firewall.InsideGrant(&v) != c.ID {
		t.Fatalf("the sub-task's read: %+v", v.Reasons)
	}
	if v := submit(t, k, read(false)); firewall.InsideGrant(&v) != p.ID {
		t.Fatalf("the task's own read: %+v", v.Reasons)
	}
	// A sub-task's call outside its grant is at its edge, not inside the
	// parent.
	w := read(true)
	w.Tool, w.Kind, w.Args = "file_write", action.KindFileWrite, map[string]any{"file_path": "/proj/docs/x.md", "content": "x"}
	if v := submit(t, k, w); v.Level < action.Confirm || firewall.InsideGrant(&v) != "" {
		t.Fatalf("the sub-task's write: %s %+v", v.Level, v.Reasons)
	}
	g, used, err := k.ActiveGrantOf(ctx, read(false))
	if err != nil || g == nil || g.ID != p.ID || used.Steps != 2 {
		t.Fatalf("the task's active grant: %+v %+v %v", g, used, err)
	}
	if _, err := k.RevokeGrant(ctx, p.ID, "alice", "cli", "done"); err != nil {
		t.Fatal(err)
	}
	if g, _, err := k.ActiveGrantOf(ctx, read(true)); err != nil || g != nil {
		t.Fatalf("the sub-task's grant after the parent's revocation: %+v %v", g, err)
	}
}
