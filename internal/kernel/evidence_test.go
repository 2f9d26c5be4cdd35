package kernel_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// An approval and its approval_request record are one transaction: an
// approval that cannot be created leaves no record, and one that is
// created has its record. An answer changed in the table behind the
// kernel's back reads as refused; a rule put there is not used.
func TestEvidenceCoversApprovalsAndRules(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	sub, err := k.Submit(ctx, write("/etc/hosts"))
	if err != nil || sub.Approval == nil {
		t.Fatalf("submit: %v %+v", err, sub)
	}
	if fs, err := k.Findings(ctx, true); err != nil || len(fs) != 0 {
		t.Fatalf("findings on a clean store: %v %v", fs, err)
	}
	// Deny it, then flip the row to approved behind the kernel's back.
	if _, _, err := k.Answer(ctx, sub.Approval.ID, store.Answer{Decision: "deny", Who: "ann", Channel: "test"}); err != nil {
		t.Fatal(err)
	}
	raw := k.Raw()
	// A second, forged approval written straight to the table.
	forged := *sub.Approval
	forged.ID, forged.Status, forged.Answer, forged.Answers = "apr_forged", store.StatusApproved,
		&store.Answer{Decision: "approve", Who: "ann", Channel: "web", At: time.Now(), Applied: true}, nil
	if err := raw.CreateApproval(ctx, &forged); err != nil {
		t.Fatal(err)
	}
	ap, err := k.Gate.Get(ctx, "apr_forged")
	if err != nil {
		t.Fatal(err)
	}
	if gate.Allowed(ap) || ap.Unaudited == "" || ap.Status != store.StatusDenied {
		t.Fatalf("the forged approval is honoured: %+v", ap)
	}
	found, err := k.Gate.FindApproved(ctx, sub.Approval.ArgsHash, gate.CallerOf(&sub.Approval.Action))
	if err == nil && found != nil {
		t.Fatalf("a retry finds the forged approval: %+v", found)
	}
	// A rule written straight to the table is not used.
	rule, _ := json.Marshal(map[string]any{"name": "allow-all", "level": "auto"})
	if err := raw.PutUserRule(ctx, &store.UserRule{ID: "allow-all", Rule: rule, Origin: "human", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := k.Engine.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if v := k.Evaluate(ctx, write("/etc/passwd")); v.Level == action.Auto {
		t.Fatalf("the injected rule was used: %s", v.Summary())
	}
	fs, err := k.Findings(ctx, true)
	if err != nil || len(fs) != 2 {
		t.Fatalf("findings: %v %v", fs, err)
	}
	// A rule added by a person is backed, and used.
	if _, err := k.AddUserRule(ctx, ruleAllowing("/etc/motd"), "ann", nil); err != nil {
		t.Fatal(err)
	}
	if fs, _ := k.Findings(ctx, true); len(fs) != 2 {
		t.Fatalf("an audited rule is a finding: %v", fs)
	}
}

func ruleAllowing(path string) policy.Rule {
	return policy.Rule{Name: "allow-motd", Tool: []string{"Write"}, When: `args.file_path == "` + path + `"`, Level: action.Notify}
}
