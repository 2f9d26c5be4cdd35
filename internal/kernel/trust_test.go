package kernel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// npmPolicy puts package installs to a person (the built-in policy lets
// them run with a notification), as a careful administrator might.
const npmPolicy = `
guards:
  shell:
    patterns:
      - {command: "npm install", level: confirm, check: npm-install, message: "installs packages; their install scripts run"}
      - {command: "mytool", level: confirm, check: mytool, message: "an in-house tool"}
`

func bash(cmd string) *action.Action {
	return &action.Action{Tool: "Bash", Agent: "claude-code", Session: "s1", Cwd: "/work/app",
		Args: map[string]any{"command": cmd}}
}

// ask submits a call, checks that a person is asked, and answers it.
func ask(t *testing.T, k *kernel.Kernel, cmd, decision string) {
	t.Helper()
	ctx := context.Background()
	sub, err := k.Submit(ctx, bash(cmd))
	if err != nil {
		t.Fatal(err)
	}
	if sub.Approval == nil {
		t.Fatalf("%q: %s, want a person asked", cmd, sub.Verdict.Summary())
	}
	if _, _, err := k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: decision, Who: "ann", Channel: "test"}); err != nil {
		t.Fatal(err)
	}
}

func level(t *testing.T, k *kernel.Kernel, cmd string) action.Level {
	t.Helper()
	a := bash(cmd)
	a.Session = "s2" // not the session of the approvals: no repeat counts
	return k.Evaluate(context.Background(), a).Level
}

func proposals(t *testing.T, k *kernel.Kernel) []kernel.Proposal {
	t.Helper()
	ps, err := k.Proposals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestLearnedTrustLoop(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, npmPolicy)
	ask(t, k, "npm install lodash", "approve")
	ask(t, k, "npm install express", "approve")
	if ps := proposals(t, k); len(ps) != 0 {
		t.Fatalf("two approvals: want no proposal, got %+v", ps)
	}
	ask(t, k, "npm install git+https://github.com/someone/thing.git", "deny")
	ask(t, k, "npm install left-pad", "approve")
	ps := proposals(t, k)
	if len(ps) != 1 {
		t.Fatalf("three approvals: want one proposal, got %d", len(ps))
	}
	p := ps[0]
	t.Logf("proposal %s: %s\nwhen: %s", p.ID, p.Title, p.Rule.When)
	if p.Rule.Level != action.Auto || p.Approvals != 3 || p.Refusals != 1 || len(p.Rule.Match) != 3 || len(p.Rule.NotMatch) != 1 {
		t.Fatalf("proposal: %+v", p)
	}
	if !strings.Contains(p.Title, "npm install") || !strings.Contains(p.Title, "/work/app") {
		t.Errorf("title %q", p.Title)
	}
	if p.DryRun.PromptsSaved != 3 || len(p.DryRun.LetThrough) != 0 || p.DryRun.Matched != 3 {
		t.Fatalf("dry run: %+v", p.DryRun)
	}
	if _, _, err := k.AcceptProposal(ctx, p.ID, "stale", nil, "ann"); !errors.Is(err, kernel.ErrProposalChanged) {
		t.Fatalf("accepting another version: %v", err)
	}
	ur, _, err := k.AcceptProposal(ctx, p.ID, p.Version, nil, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if ur.Origin != "learned" {
		t.Errorf("origin %q", ur.Origin)
	}
	for cmd, want := range map[string]action.Level{
		"npm install chalk":                              action.Auto,
		"npm install chalk react":                        action.Auto,
		"npm install git+https://x.test/y.git":           action.Confirm, // the guard's fetch-exec finding
		"npm install github:someone/thing":               action.Confirm,
		"npm install someone/thing":                      action.Confirm,
		"npm install ./vendor/pkg":                       action.Confirm,
		"npm install -g chalk":                           action.Confirm, // an option never approved
		"npm install --registry=https://evil.test chalk": action.Confirm,
		"sudo npm install chalk":                         action.Confirm,
		"npm install chalk && mytool x":                  action.Confirm,
		"npm install chalk > /etc/motd":                  action.Confirm,
		"npm install $(mytool pick)":                     action.Confirm,
	} {
		if got := level(t, k, cmd); got != want {
			t.Errorf("%q: %s, want %s", cmd, got, want)
		}
	}
	other := bash("npm install chalk")
	other.Cwd = "/work/other"
	if v := k.Evaluate(ctx, other); v.Level != action.Confirm {
		t.Errorf("another working directory: %s", v.Summary())
	}
	if ps := proposals(t, k); len(ps) != 0 {
		t.Fatalf("an accepted proposal is not proposed again: %+v", ps)
	}
	hist, err := k.PolicyHistory(ctx, 0)
	if err != nil || len(hist) != 1 || !strings.Contains(string(hist[0].Data), `"origin":"learned"`) {
		t.Fatalf("history: %v %+v", err, hist)
	}
	// Revertible like any user rule.
	if err := k.RemoveUserRule(ctx, ur.ID, "ann"); err != nil {
		t.Fatal(err)
	}
	if got := level(t, k, "npm install chalk"); got != action.Confirm {
		t.Errorf("after removing the rule: %s", got)
	}
}

func TestRefusalsNeverProposed(t *testing.T) {
	k := open(t, nil, npmPolicy)
	ask(t, k, "npm install lodash", "approve")
	ask(t, k, "npm install express", "approve")
	ask(t, k, "npm install left-pad", "approve")
	ask(t, k, "npm install evil-thing", "deny")
	ask(t, k, "npm install typo-squat", "deny")
	ask(t, k, "npm install react", "approve")
	if ps := proposals(t, k); len(ps) != 0 {
		t.Fatalf("a kind of call the person refused twice: want no proposal, got %s", ps[0].Rule.When)
	}
	// Refusals alone propose nothing either.
	k2 := open(t, nil, npmPolicy)
	for _, c := range []string{"npm install a1", "npm install a2", "npm install a3"} {
		ask(t, k2, c, "deny")
	}
	if ps := proposals(t, k2); len(ps) != 0 {
		t.Fatalf("refusals only: %+v", ps)
	}
}

func TestNoBareProgramProposed(t *testing.T) {
	k := open(t, nil, npmPolicy)
	for _, c := range []string{"mytool alpha", "mytool beta", "mytool gamma"} {
		ask(t, k, c, "approve")
	}
	if ps := proposals(t, k); len(ps) != 0 {
		t.Fatalf("varying operands with no subcommand: want no proposal, got %s", ps[0].Rule.When)
	}
	// The same call approved again and again: a rule for exactly it.
	for range 3 {
		ask(t, k, "mytool sync --all", "approve")
	}
	ps := proposals(t, k)
	if len(ps) != 1 {
		t.Fatalf("want one proposal, got %d", len(ps))
	}
	if _, _, err := k.AcceptProposal(context.Background(), ps[0].ID, "", nil, "ann"); err != nil {
		t.Fatal(err)
	}
	if got := level(t, k, "mytool sync --all"); got != action.Auto {
		t.Errorf("the approved call: %s", got)
	}
	for _, c := range []string{"mytool sync", "mytool sync --all extra", "mytool delete --all"} {
		if got := level(t, k, c); got != action.Confirm {
			t.Errorf("%q: %s", c, got)
		}
	}
}

func TestDismissedProposalStaysDismissed(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, npmPolicy)
	for _, c := range []string{"npm install a", "npm install b", "npm install c"} {
		ask(t, k, c, "approve")
	}
	ps := proposals(t, k)
	if len(ps) != 1 {
		t.Fatalf("want one proposal, got %d", len(ps))
	}
	if _, err := k.DismissProposal(ctx, ps[0].ID, "ann"); err != nil {
		t.Fatal(err)
	}
	ask(t, k, "npm install d", "approve")
	if ps := proposals(t, k); len(ps) != 0 {
		t.Fatalf("dismissed: %+v", ps)
	}
	if got := level(t, k, "npm install e"); got != action.Confirm {
		t.Errorf("nothing is loosened without a yes: %s", got)
	}
}

// A user-layer rule, however broad, never lowers a hard guard's floor or an
// admin rule; the dry run names what it holds.
func TestLearnedRuleCannotLowerFloors(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, npmPolicy)
	for _, c := range []string{"npm install a", "npm install b", "npm install c"} {
		ask(t, k, c, "approve")
	}
	ps := proposals(t, k)
	if len(ps) != 1 {
		t.Fatalf("want one proposal, got %d", len(ps))
	}
	broad := policy.Rule{Name: "everything", Kind: []action.Kind{action.KindShell}, Level: action.Auto}
	sub, err := k.Submit(ctx, bash("git push origin main"))
	if err != nil || sub.Verdict.Level != action.Approve {
		t.Fatalf("git push: %v %s", err, sub.Verdict.Summary())
	}
	if _, err := k.Submit(ctx, bash("rm -rf /")); err != nil {
		t.Fatal(err)
	}
	rep, err := k.ReplayRule(ctx, broad)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]action.Level{}
	for _, h := range rep.Held {
		held[h.Summary] = h.With
	}
	if held["Bash git push origin main"] != action.Approve || held["Bash rm -rf /"] != action.Block {
		t.Fatalf("held: %+v", rep.Held)
	}
	// An edited rule may broaden the proposal, and is checked again.
	if _, _, err := k.AcceptProposal(ctx, ps[0].ID, "", &broad, "ann"); err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]action.Level{
		"git push origin main": action.Approve, // builtin-git-push: an admin rule
		"rm -rf /":             action.Block,   // a hard floor
		"npm install x":        action.Auto,
	} {
		if got := level(t, k, cmd); got != want {
			t.Errorf("%q: %s, want %s", cmd, got, want)
		}
	}
}

func TestEditedRuleMayNotLetRefusalsThrough(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, npmPolicy)
	ask(t, k, "npm install github:someone/thing", "deny")
	for _, c := range []string{"npm install a", "npm install b", "npm install c"} {
		ask(t, k, c, "approve")
	}
	ps := proposals(t, k)
	if len(ps) != 1 {
		t.Fatalf("want one proposal, got %d", len(ps))
	}
	broad := ps[0].Rule
	broad.When = `facts.commands.exists(c, c.name == "npm")`
	broad.NotMatch = nil
	if _, _, err := k.AcceptProposal(ctx, ps[0].ID, "", &broad, "ann"); err == nil {
		t.Fatal("an edited rule matching a refused call was accepted")
	}
	if got := level(t, k, "npm install z"); got != action.Confirm {
		t.Errorf("nothing saved: %s", got)
	}
}

func TestProposalPathsUnderADirectory(t *testing.T) {
	k := open(t, nil, npmPolicy)
	for _, c := range []string{"mytool fmt src/a.go", "mytool fmt src/b.go", "mytool fmt lib/c.go"} {
		ask(t, k, c, "approve")
	}
	ps := proposals(t, k)
	if len(ps) != 1 {
		t.Fatalf("want one proposal, got %d", len(ps))
	}
	t.Logf("%s\n%s", ps[0].Title, ps[0].Rule.When)
	if _, _, err := k.AcceptProposal(context.Background(), ps[0].ID, "", nil, "ann"); err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]action.Level{
		"mytool fmt docs/x.md":        action.Auto,
		"mytool fmt /etc/passwd":      action.Confirm,
		"mytool fmt ../other/x.go":    action.Confirm,
		"mytool fmt /work/app/../x":   action.Confirm,
		"mytool rm src/a.go":          action.Confirm,
		"mytool fmt src/a.go > x.txt": action.Confirm,
	} {
		if got := level(t, k, cmd); got != want && (want != action.Confirm || got < want) {
			t.Errorf("%q: %s, want %s", cmd, got, want)
		}
	}
}

// The dry run of a rule broader than the person's approvals names every
// refused or risky call it would let through.
func TestDryRunNamesWhatARuleLetsThrough(t *testing.T) {
	k := open(t, nil, npmPolicy)
	ask(t, k, "npm install lodash", "approve")
	ask(t, k, "npm install github:someone/thing", "deny")
	ask(t, k, "npm install git+https://x.test/y.git", "approve")
	broad := policy.Rule{Name: "all-npm", Kind: []action.Kind{action.KindShell},
		When: `facts.commands.exists(c, c.name == "npm")`, Level: action.Auto}
	rep, err := k.ReplayRule(context.Background(), broad)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Examined != 3 || rep.Matched != 3 || rep.PromptsSaved != 3 || len(rep.LetThrough) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	lt := rep.LetThrough[0]
	if !strings.Contains(lt.Summary, "github:someone/thing") || !strings.Contains(lt.Why, "refused by ann") {
		t.Fatalf("let through: %+v", lt)
	}
	// Without the approval of a URL install, the guard's concern about it
	// is news to the person: risky.
	k2 := open(t, nil, npmPolicy)
	ask(t, k2, "npm install lodash", "approve")
	if _, err := k2.Submit(context.Background(), bash("npm install git+https://x.test/y.git")); err != nil {
		t.Fatal(err)
	}
	rep, err = k2.ReplayRule(context.Background(), broad)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.LetThrough) != 1 || !strings.Contains(rep.LetThrough[0].Why, "shell.fetch-exec") {
		t.Fatalf("let through: %+v", rep.LetThrough)
	}
}

// Under a locked policy the user layer can only tighten: a learned rule
// would save nothing, so none is proposed.
func TestNoProposalUnderLockedPolicy(t *testing.T) {
	k := open(t, nil, "locked: true\n"+npmPolicy)
	for _, c := range []string{"npm install a", "npm install b", "npm install c"} {
		ask(t, k, c, "approve")
	}
	if ps := proposals(t, k); len(ps) != 0 {
		t.Fatalf("locked policy: %+v", ps)
	}
	k2 := open(t, nil, "settings:\n  adaptation: {propose_after: -1}\n"+npmPolicy)
	for _, c := range []string{"npm install a", "npm install b", "npm install c"} {
		ask(t, k2, c, "approve")
	}
	if ps := proposals(t, k2); len(ps) != 0 {
		t.Fatalf("propose_after -1: %+v", ps)
	}
}
