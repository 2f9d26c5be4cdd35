package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

func ingestShell(t *testing.T, k *kernel.Kernel, agent, key, cmd string) *kernel.IngestOutcome {
	t.Helper()
	a := &action.Action{Agent: agent, Session: "s1", Tool: "Bash", Cwd: t.TempDir(), Args: map[string]any{"command": cmd}}
	out, err := k.IngestCall(context.Background(), a, kernel.IngestSource{Key: key, Format: "claude-code", File: "t.jsonl", Line: 3})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestIngestCallIsJudgedAndRecordedOnce(t *testing.T) {
	k := open(t, clock.Real{}, "")
	ctx := context.Background()
	ok := ingestShell(t, k, "claude-code", "k1", "echo hi")
	if ok.Duplicate || ok.Violation || ok.Verdict.Level != action.Auto {
		t.Fatalf("harmless call: %+v", ok)
	}
	bad := ingestShell(t, k, "claude-code", "k2", "echo 'alias ls=evil' >> ~/.bashrc")
	if !bad.Violation || bad.Verdict.Level != action.Block {
		t.Fatalf("planted violation: %+v", bad)
	}
	again := ingestShell(t, k, "claude-code", "k1", "echo hi")
	if !again.Duplicate || again.ActionID != ok.ActionID {
		t.Fatalf("second ingest: %+v", again)
	}
	types := auditTypes(t, k)
	if n := strings.Count(strings.Join(types, ","), audit.TypeIngested); n != 2 {
		t.Fatalf("%d ingested records (%v), want 2", n, types)
	}
	if slices.Contains(types, audit.TypeAction) || slices.Contains(types, audit.TypeVerdict) {
		t.Fatalf("an ingested call passed for a live one: %v", types)
	}
	recs, _ := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeIngested}})
	var r kernel.IngestedRecord
	if err := json.Unmarshal(recs[0].Data, &r); err != nil {
		t.Fatal(err)
	}
	if !r.Ingested || r.Source.File != "t.jsonl" || r.Source.Line != 3 || r.Action.ID != ok.ActionID || recs[0].Agent != "claude-code" {
		t.Fatalf("record %+v (%+v)", r, recs[0])
	}
	if _, _, err := k.IngestResult(ctx, kernel.IngestedResult{Source: kernel.IngestSource{Key: "never"}}); !errors.Is(err, kernel.ErrNotIngested) {
		t.Fatalf("result of an unknown call: %v", err)
	}
}

// ingestEdit ingests an edit of path from before to after, with its result.
func ingestEdit(t *testing.T, k *kernel.Kernel, key, path string, before *string, after string) string {
	t.Helper()
	a := &action.Action{Agent: "claude-code", Session: "s1", Tool: "Write", Cwd: filepath.Dir(path),
		Args: map[string]any{"file_path": path, "content": after}}
	out, err := k.IngestCall(context.Background(), a, kernel.IngestSource{Key: key, Format: "claude-code", File: "t.jsonl", Line: 1})
	if err != nil {
		t.Fatal(err)
	}
	id, fresh, err := k.IngestResult(context.Background(), kernel.IngestedResult{Source: kernel.IngestSource{Key: key, Line: 2},
		Change: &kernel.FileChange{Path: path, Before: before, After: after}})
	if err != nil || !fresh || id != out.ActionID {
		t.Fatalf("result: %s %v %v", id, fresh, err)
	}
	if _, fresh, _ := k.IngestResult(context.Background(), kernel.IngestedResult{Source: kernel.IngestSource{Key: key}}); fresh {
		t.Fatal("a result was recorded twice")
	}
	return id
}

func TestRollbackOfIngestedWrites(t *testing.T) {
	k := open(t, clock.Real{}, "")
	ctx := context.Background()
	dir := t.TempDir()
	before := "line one\nline two\n"
	after := "line one\nline 2\n"

	t.Run("restores the previous content", func(t *testing.T) {
		p := filepath.Join(dir, "app.txt")
		os.WriteFile(p, []byte(after), 0o640)
		id := ingestEdit(t, k, "e1", p, &before, after)
		plan, err := k.PlanRollback(ctx, id)
		if err != nil || !strings.Contains(plan.Diff, "-line 2") || !strings.Contains(plan.Diff, "+line two") {
			t.Fatalf("plan %+v, %v", plan, err)
		}
		if _, err := k.Rollback(ctx, id, "alice", "cli"); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != before {
			t.Fatalf("file is %q", b)
		}
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
			t.Fatalf("mode %v", fi.Mode())
		}
		recs, _ := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeRollback}, ActionID: id})
		if len(recs) != 1 || !strings.Contains(string(recs[0].Data), `"who":"alice"`) {
			t.Fatalf("rollback records %v", recs)
		}
		// Done once: the file is no longer what the call made it.
		if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrChangedSince) {
			t.Fatalf("second rollback: %v", err)
		}
	})

	t.Run("never clobbers later work", func(t *testing.T) {
		p := filepath.Join(dir, "later.txt")
		id := ingestEdit(t, k, "e2", p, &before, after)
		os.WriteFile(p, []byte(after+"more work\n"), 0o644)
		if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrChangedSince) {
			t.Fatalf("rollback over later work: %v", err)
		}
		if b, _ := os.ReadFile(p); string(b) != after+"more work\n" {
			t.Fatalf("later work lost: %q", b)
		}
		os.Remove(p)
		if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrChangedSince) {
			t.Fatalf("rollback of a removed file: %v", err)
		}
	})

	t.Run("a created file is removed", func(t *testing.T) {
		p := filepath.Join(dir, "new.txt")
		os.WriteFile(p, []byte("fresh"), 0o644)
		id := ingestEdit(t, k, "e3", p, nil, "fresh")
		plan, err := k.Rollback(ctx, id, "alice", "cli")
		if err != nil || !plan.Remove {
			t.Fatalf("%+v %v", plan, err)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("created file still there: %v", err)
		}
	})

	t.Run("symbolic links are refused", func(t *testing.T) {
		target := filepath.Join(dir, "target.txt")
		os.WriteFile(target, []byte(after), 0o644)
		link := filepath.Join(dir, "link.txt")
		os.Symlink(target, link)
		id := ingestEdit(t, k, "e4", link, &before, after)
		if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrRollbackRefused) {
			t.Fatalf("rollback through a link: %v", err)
		}
		if b, _ := os.ReadFile(target); string(b) != after {
			t.Fatal("the link's target was written")
		}
	})

	t.Run("a forged transcript cannot rewrite protected files", func(t *testing.T) {
		// The transcript claims the agent edited Overseer's policy and a
		// hook configuration; rolling back would write what it says was
		// there before.
		for i, p := range []string{filepath.Join(k.Home, "policy.yaml"), filepath.Join(dir, ".claude", "settings.json")} {
			os.MkdirAll(filepath.Dir(p), 0o700)
			os.WriteFile(p, []byte("current"), 0o600)
			evil := "evil"
			id := ingestEdit(t, k, "f"+string(rune('0'+i)), p, &evil, "current")
			if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrRollbackRefused) {
				t.Fatalf("%s: %v", p, err)
			}
			if b, _ := os.ReadFile(p); string(b) != "current" {
				t.Fatalf("%s was rewritten", p)
			}
		}
	})

	t.Run("secrets and paths through linked directories are refused", func(t *testing.T) {
		key := filepath.Join(dir, ".ssh", "id_ed25519")
		os.MkdirAll(filepath.Dir(key), 0o700)
		os.WriteFile(key, []byte("current"), 0o600)
		evil := "attacker key"
		id := ingestEdit(t, k, "s1", key, &evil, "current")
		if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrRollbackRefused) {
			t.Fatalf("rollback of a secret: %v", err)
		}
		real := filepath.Join(dir, "real")
		os.MkdirAll(real, 0o755)
		os.WriteFile(filepath.Join(real, "f.txt"), []byte(after), 0o644)
		os.Symlink(real, filepath.Join(dir, "linkdir"))
		id = ingestEdit(t, k, "s2", filepath.Join(dir, "linkdir", "f.txt"), &before, after)
		if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrRollbackRefused) {
			t.Fatalf("rollback through a linked directory: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(real, "f.txt")); string(b) != after {
			t.Fatal("written through the linked directory")
		}
	})

	t.Run("a result naming another file than its call is not believed", func(t *testing.T) {
		p := filepath.Join(dir, "called.txt")
		other := filepath.Join(dir, "other.txt")
		os.WriteFile(other, []byte(after), 0o644)
		a := &action.Action{Agent: "claude-code", Session: "s1", Tool: "Write", Cwd: dir, Args: map[string]any{"file_path": p, "content": after}}
		out, err := k.IngestCall(ctx, a, kernel.IngestSource{Key: "m1", Format: "claude-code", File: "t.jsonl", Line: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := k.IngestResult(ctx, kernel.IngestedResult{Source: kernel.IngestSource{Key: "m1"},
			Change: &kernel.FileChange{Path: other, Before: &before, After: after}}); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Rollback(ctx, out.ActionID, "alice", "cli"); !errors.Is(err, kernel.ErrNoRollback) {
			t.Fatalf("rollback of a file the call did not write: %v", err)
		}
	})

	t.Run("a change without its audit record is refused", func(t *testing.T) {
		p := filepath.Join(dir, "tampered.txt")
		os.WriteFile(p, []byte(after), 0o644)
		id := ingestEdit(t, k, "e5", p, &before, after)
		// Someone with the database rewrites the stored previous content.
		err := k.Raw().UpdateState(ctx, "ingest.results", id, func(old []byte) ([]byte, error) {
			return []byte(strings.Replace(string(old), "line two", "evil", 1)), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrRollbackRefused) {
			t.Fatalf("tampered change: %v", err)
		}
	})

	t.Run("a call without a change cannot be rolled back", func(t *testing.T) {
		out := ingestShell(t, k, "claude-code", "s9", "echo hi")
		if _, err := k.Rollback(ctx, out.ActionID, "alice", "cli"); !errors.Is(err, kernel.ErrNoRollback) {
			t.Fatalf("%v", err)
		}
	})
}

func TestEarningTrust(t *testing.T) {
	k := open(t, clock.Real{}, "")
	ctx := context.Background()
	const agent = "bot"
	dir := t.TempDir()
	ingestShell(t, k, agent, "t1", "echo one")
	ingestShell(t, k, agent, "t2", "ls")
	w := &action.Action{Agent: agent, Session: "s1", Tool: "deploy_app", Cwd: dir, Args: map[string]any{"target": "staging"}}
	if _, err := k.IngestCall(ctx, w, kernel.IngestSource{Key: "t3", Format: "jsonl", File: "t.jsonl", Line: 9}); err != nil {
		t.Fatal(err)
	}

	rec, err := k.AgentRecord(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Trust.Mode != kernel.ModeAudited || rec.Ingested != 3 || rec.Tools["Bash"] != 2 || rec.Tools["deploy_app"] != 1 {
		t.Fatalf("record %+v", rec)
	}
	if _, err := k.PromoteAgent(ctx, kernel.Promotion{Agent: agent, To: kernel.ModeSupervised, Tools: []string{"deploy_app"}, Who: "alice"}); !errors.Is(err, kernel.ErrPromotion) {
		t.Fatalf("skipping a step: %v", err)
	}
	// Before: a deployment by the agent needs a person.
	judge := func() action.Level {
		a := *w
		a.Args = map[string]any{"target": "prod"}
		return k.Evaluate(ctx, &a).Level
	}
	if l := judge(); l < action.Confirm {
		t.Fatalf("a deployment is %s before the promotion", l)
	}
	ch, err := k.PromoteAgent(ctx, kernel.Promotion{Agent: agent, To: kernel.ModeDelegated, Who: "alice", Reason: "clean record"})
	if err != nil {
		t.Fatal(err)
	}
	if g := ch.Trust.Grant; g == nil || !slices.Equal(g.Tools, []string{"Bash", "deploy_app"}) || g.Basis != 3 || g.BasisIngested != 3 || g.MaxSteps != 6 {
		t.Fatalf("grant proposal %+v", ch.Trust.Grant)
	}
	// The proposal is issued as a grant (delegated mode) and takes effect.
	active := func() []kernel.GrantView {
		gs, err := k.ListGrants(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		return gs
	}
	if gs := active(); len(gs) != 1 || gs[0].ID != ch.Trust.GrantID || gs[0].Subject.Agent != agent || gs[0].IssuedBy != "alice" ||
		!slices.Equal(gs[0].Allow[0].Tools, []string{"Bash", "deploy_app"}) || gs[0].Budget.Steps != 6 {
		t.Fatalf("grants %+v (trust %+v)", gs, ch.Trust)
	}
	if l := judge(); l != action.Auto {
		t.Fatalf("a deployment is %s under the grant", l)
	}
	other := *w
	other.Agent = "other"
	if l := k.Evaluate(ctx, &other).Level; l < action.Confirm {
		t.Fatalf("another agent's deployment is %s", l)
	}

	if _, err := k.PromoteAgent(ctx, kernel.Promotion{Agent: agent, To: kernel.ModeSupervised, Tools: []string{"Read"}, Who: "alice"}); !errors.Is(err, kernel.ErrPromotion) {
		t.Fatalf("auto-approval of a tool never used: %v", err)
	}
	if _, err := k.PromoteAgent(ctx, kernel.Promotion{Agent: agent, To: kernel.ModeSupervised, Tools: []string{"deploy_app", "Bash"}, Who: "alice"}); err != nil {
		t.Fatal(err)
	}
	if l := judge(); l != action.Auto {
		t.Fatalf("a deployment is %s after auto-approval was earned", l)
	}
	// Another agent earned nothing.
	if l := k.Evaluate(ctx, &other).Level; l < action.Confirm {
		t.Fatalf("another agent's deployment is %s", l)
	}
	trustRules := func() int {
		rules, err := k.Store.ListUserRules(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rules {
			if strings.HasPrefix(r.ID, "trust:") {
				n++
			}
		}
		return n
	}
	if n := trustRules(); n != 2 {
		t.Fatalf("%d auto-approval rules, want 2", n)
	}
	// The hard guards still hold on an auto-approved tool.
	guarded := &action.Action{Agent: agent, Session: "s1", Tool: "Bash", Cwd: dir, Args: map[string]any{"command": "echo x > .git/hooks/pre-commit"}}
	if l := k.Evaluate(ctx, guarded).Level; l != action.Block {
		t.Fatalf("auto-approval lowered a hard guard: %s", l)
	}

	// A violation found by ingest demotes it and removes the auto-approval.
	v := ingestShell(t, k, agent, "t4", "echo 'alias ls=evil' >> ~/.bashrc")
	if v.Demoted == nil || v.Demoted.From != kernel.ModeSupervised || v.Demoted.To != kernel.ModeDelegated || v.Demoted.Who != "overseer" {
		t.Fatalf("violation: %+v", v.Demoted)
	}
	if n := trustRules(); n != 0 {
		t.Fatalf("%d auto-approval rules left after the demotion", n)
	}
	if len(active()) != 1 {
		t.Fatal("the grant of delegated mode is gone after a demotion to delegated")
	}
	if _, err := k.PromoteAgent(ctx, kernel.Promotion{Agent: agent, To: kernel.ModeSupervised, Tools: []string{"deploy_app"}, Who: "alice"}); !errors.Is(err, kernel.ErrPromotion) {
		t.Fatalf("promotion with a violation on record: %v", err)
	}
	if _, err := k.PromoteAgent(ctx, kernel.Promotion{Agent: agent, To: kernel.ModeSupervised, Tools: []string{"deploy_app"}, Who: "alice", AcceptViolations: true}); err != nil {
		t.Fatalf("promotion accepting the violation: %v", err)
	}
	if l := judge(); l != action.Auto {
		t.Fatalf("a deployment is %s after the promotion", l)
	}
	if _, err := k.DemoteAgent(ctx, agent, "alice", "changed my mind"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.DemoteAgent(ctx, agent, "alice", "back to the start"); err != nil {
		t.Fatal(err)
	}
	// Back to audited: the grant is revoked, the agent asks again.
	if gs := active(); len(gs) != 0 {
		t.Fatalf("grants still active: %+v", gs)
	}
	if l := judge(); l < action.Confirm {
		t.Fatalf("a deployment is %s after the demotion to audited", l)
	}
	rec, _ = k.AgentRecord(ctx, agent)
	if rec.Trust.Mode != kernel.ModeAudited || len(rec.Violations) != 1 || len(rec.History) != 6 || len(rec.History[3].Accepted) != 1 {
		t.Fatalf("record after demotions: mode %s violations %v history %+v", rec.Trust.Mode, rec.Violations, rec.History)
	}
	if !slices.Contains(rec.Proposal.Excluded, "Bash") {
		t.Fatalf("the tool of the violation is proposed again: %+v", rec.Proposal)
	}
	if n := strings.Count(strings.Join(auditTypes(t, k), ","), audit.TypeTrust); n != 6 {
		t.Fatalf("%d trust records, want 6", n)
	}
}

// Trust changed in the database behind Overseer's back is no trust.
func TestTrustWithoutItsRecordIsNoTrust(t *testing.T) {
	k := open(t, clock.Real{}, "")
	ctx := context.Background()
	ingestShell(t, k, "bot", "k1", "ls")
	if _, err := k.PromoteAgent(ctx, kernel.Promotion{Agent: "bot", To: kernel.ModeDelegated, Who: "alice"}); err != nil {
		t.Fatal(err)
	}
	if tr, _ := k.AgentTrustOf(ctx, "bot"); tr.Mode != kernel.ModeDelegated {
		t.Fatalf("mode %s", tr.Mode)
	}
	err := k.Raw().UpdateState(ctx, "trust.agents", "bot", func(old []byte) ([]byte, error) {
		return []byte(strings.Replace(string(old), `"delegated"`, `"supervised"`, 1)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if tr, _ := k.AgentTrustOf(ctx, "bot"); tr.Mode != kernel.ModeAudited {
		t.Fatalf("tampered trust read as %s", tr.Mode)
	}
	// Written for an agent that never had a trust record: the same.
	if err := k.Raw().UpdateState(ctx, "trust.agents", "ghost", func([]byte) ([]byte, error) {
		return []byte(`{"agent":"ghost","mode":"supervised","auto_tools":["Bash"]}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	if tr, _ := k.AgentTrustOf(ctx, "ghost"); tr.Mode != kernel.ModeAudited {
		t.Fatalf("unbacked trust read as %s", tr.Mode)
	}
}

// ingestPatch ingests a Codex apply_patch call that updated path, with
// its patch as the change.
func ingestPatch(t *testing.T, k *kernel.Kernel, key, path, body string) string {
	t.Helper()
	patch := "*** Begin Patch\n*** Update File: " + path + "\n" + body + "\n*** End Patch\n"
	a := &action.Action{Agent: "codex", Session: "s2", Tool: "apply_patch", Cwd: filepath.Dir(path),
		Args: map[string]any{"input": patch}}
	out, err := k.IngestCall(context.Background(), a, kernel.IngestSource{Key: key, Format: "codex", File: "r.jsonl", Line: 1})
	if err != nil {
		t.Fatal(err)
	}
	id, fresh, err := k.IngestResult(context.Background(), kernel.IngestedResult{Source: kernel.IngestSource{Key: key, Line: 2},
		Change: &kernel.FileChange{Path: path, Patch: body}})
	if err != nil || !fresh || id != out.ActionID {
		t.Fatalf("result: %s %v %v", id, fresh, err)
	}
	return id
}

// TestRollbackOfIngestedPatches: a Codex patch is rolled back by reversing
// it, only where the file is what the patch made it; the refusals of
// rollbacks hold for patches too.
func TestRollbackOfIngestedPatches(t *testing.T) {
	k := open(t, clock.Real{}, "")
	ctx := context.Background()
	dir := t.TempDir()
	body := "@@\n line one\n-line two\n+line 2"
	after := "line one\nline 2\nline three\n"

	p := filepath.Join(dir, "app.txt")
	os.WriteFile(p, []byte(after), 0o640)
	id := ingestPatch(t, k, "p1", p, body)
	plan, err := k.PlanRollback(ctx, id)
	if err != nil || plan.Remove || !strings.Contains(plan.Diff, "-line 2") || !strings.Contains(plan.Diff, "+line two") {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	if _, err := k.Rollback(ctx, id, "alice", "cli"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "line one\nline two\nline three\n" {
		t.Fatalf("file is %q", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	recs, _ := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeIngestedResult}, ActionID: id})
	if len(recs) != 1 || !strings.Contains(string(recs[0].Data), `"patch_sha256"`) {
		t.Fatalf("the ingested result does not describe the patch: %v", recs)
	}
	if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrChangedSince) {
		t.Fatalf("second rollback: %v", err)
	}

	// Later work in the patch's lines: refused, untouched.
	q := filepath.Join(dir, "later.txt")
	os.WriteFile(q, []byte(after), 0o644)
	id = ingestPatch(t, k, "p2", q, body)
	os.WriteFile(q, []byte("line one\nline 2 and more\nline three\n"), 0o644)
	if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrChangedSince) {
		t.Fatalf("rollback over later work: %v", err)
	}
	if b, _ := os.ReadFile(q); string(b) != "line one\nline 2 and more\nline three\n" {
		t.Fatalf("later work lost: %q", b)
	}

	// A symbolic link is refused.
	target := filepath.Join(dir, "target.txt")
	os.WriteFile(target, []byte(after), 0o644)
	link := filepath.Join(dir, "link.txt")
	os.Symlink(target, link)
	id = ingestPatch(t, k, "p3", link, body)
	if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrRollbackRefused) && !errors.Is(err, kernel.ErrNoRollback) {
		t.Fatalf("rollback through a link: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != after {
		t.Fatal("the link's target was written")
	}

	// A forged rollout cannot rewrite protected files: the reversed patch
	// would put the attacker's line into a hook configuration.
	hook := filepath.Join(dir, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(hook), 0o700)
	os.WriteFile(hook, []byte("{\"hooks\": \"overseer\"}\n"), 0o600)
	id = ingestPatch(t, k, "p4", hook, "@@\n-{\"hooks\": \"none\"}\n+{\"hooks\": \"overseer\"}")
	if _, err := k.Rollback(ctx, id, "alice", "cli"); !errors.Is(err, kernel.ErrRollbackRefused) {
		t.Fatalf("rollback of a hook configuration: %v", err)
	}
	if b, _ := os.ReadFile(hook); string(b) != "{\"hooks\": \"overseer\"}\n" {
		t.Fatalf("the hook configuration was rewritten: %q", b)
	}

	// A patch change may not also claim contents.
	r := filepath.Join(dir, "mixed.txt")
	os.WriteFile(r, []byte(after), 0o644)
	a := &action.Action{Agent: "codex", Session: "s2", Tool: "apply_patch", Cwd: dir,
		Args: map[string]any{"input": "*** Begin Patch\n*** Update File: mixed.txt\n" + body + "\n*** End Patch\n"}}
	out, err := k.IngestCall(ctx, a, kernel.IngestSource{Key: "p5", Format: "codex", File: "r.jsonl", Line: 1})
	if err != nil {
		t.Fatal(err)
	}
	evil := "evil"
	if _, _, err := k.IngestResult(ctx, kernel.IngestedResult{Source: kernel.IngestSource{Key: "p5"},
		Change: &kernel.FileChange{Path: r, Patch: body, Before: &evil}}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Rollback(ctx, out.ActionID, "alice", "cli"); !errors.Is(err, kernel.ErrNoRollback) {
		t.Fatalf("a patch change with contents: %v", err)
	}
}
