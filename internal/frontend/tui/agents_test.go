package tui

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// TestAgentsView: the agents view lists the agents with their mode and
// the selected one's record, and promotes and demotes with the console's
// proposals: audited → delegated with the proposed grant (refused while a
// violation is unanswered, unless accepted), delegated → supervised with
// the tools picked (never one a violation touched), and back.
func TestAgentsView(t *testing.T) {
	d := newDaemon(t)
	ctx := context.Background()
	ingest := func(key, tool string, args map[string]any) {
		t.Helper()
		a := &action.Action{Agent: "bot", Session: "s1", Tool: tool, Cwd: "/proj", Args: args}
		if _, err := d.k.IngestCall(ctx, a, kernel.IngestSource{Key: key, Format: "generic", File: "/t/bot.jsonl", Line: 1}); err != nil {
			t.Fatal(err)
		}
	}
	ingest("c1", "Read", map[string]any{"file_path": "/proj/a.go"})
	ingest("c2", "Grep", map[string]any{"pattern": "x", "path": "/proj"})
	ingest("c3", "Bash", map[string]any{"command": "echo 'alias ls=evil' >> ~/.bashrc"}) // a violation
	m := newModel(t, d)
	m = run(t, m, key("T"))
	s := screen(m)
	for _, want := range []string{"Agents (earned trust", "bot", "audited", "Record of bot", "3 ingested actions",
		"Violations: 1", "Promote to delegated with the proposed grant", "P promote"} {
		if !strings.Contains(s, want) {
			t.Fatalf("screen lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "tools Bash") {
		t.Fatalf("the proposal offers the tool of the violation:\n%s", s)
	}
	// Refused while the violation is unanswered; accepted with v.
	m = run(t, m, key("P"))
	if s := screen(m); !strings.Contains(s, "promote bot failed") || !strings.Contains(s, "violation") {
		t.Fatalf("promotion with a violation:\n%s", s)
	}
	m = run(t, m, key("v"))
	m = run(t, m, key("P"))
	tr, err := d.k.AgentTrustOf(ctx, "bot")
	if err != nil || tr.Mode != kernel.ModeDelegated || tr.GrantID == "" {
		t.Fatalf("after P: %+v %v", tr, err)
	}
	if s := screen(m); !strings.Contains(s, "bot promoted: audited → delegated") || !strings.Contains(s, "Promote to supervised") {
		t.Fatalf("after promoting:\n%s", s)
	}
	// To supervised: tools must be picked; the violation's tool is not offered.
	m = run(t, m, key("P"))
	if s := screen(m); !strings.Contains(s, "pick the tools") {
		t.Fatalf("promotion without tools:\n%s", s)
	}
	s = screen(m)
	if !strings.Contains(s, "1 [ ] Grep") || !strings.Contains(s, "2 [ ] Read") || strings.Contains(s, "[ ] Bash") {
		t.Fatalf("tools offered:\n%s", s)
	}
	m = run(t, m, key("2"))
	if s := screen(m); !strings.Contains(s, "2 [x] Read") {
		t.Fatalf("after picking Read:\n%s", s)
	}
	m = run(t, m, key("v"))
	m = run(t, m, key("v")) // (still on)
	m = run(t, m, key("P"))
	tr, err = d.k.AgentTrustOf(ctx, "bot")
	if err != nil || tr.Mode != kernel.ModeSupervised || strings.Join(tr.AutoTools, ",") != "Read" {
		t.Fatalf("after the second P: %+v %v\n%s", tr, err, screen(m))
	}
	m = run(t, m, key("D"))
	if tr, _ := d.k.AgentTrustOf(ctx, "bot"); tr.Mode != kernel.ModeDelegated {
		t.Fatalf("after D: %+v", tr)
	}
	rec, err := d.k.AgentRecord(ctx, "bot")
	if err != nil || len(rec.History) != 3 || rec.History[2].Op != "demote" || rec.History[0].Who != "ann" {
		t.Fatalf("history %+v %v", rec.History, err)
	}
	m = run(t, m, key("esc"))
	if s := screen(m); !strings.Contains(s, "Waiting for you") {
		t.Fatalf("back to the queue:\n%s", s)
	}
}

// TestDescribeNewRecords: the audit tail says what grants, ingested
// results, verdicts inside a grant or at its edge, conflicts and tasks
// are, without an agent's control characters.
func TestDescribeNewRecords(t *testing.T) {
	g := kernel.Grant{ID: "grt_c", Spec: grant.Spec{Subject: grant.Subject{Agent: "overseer", Session: "t1", SubagentType: "subtask", SubagentID: "t2"},
		Budget: grant.Budget{Steps: 5}, Expires: time.Now().Add(time.Hour), Parent: "grt_p"}, IssuedBy: "grant:grt_p"}
	b, _ := json.Marshal(map[string]any{"op": "issue", "id": g.ID, "grant": g})
	if got := describe(store.AuditRecord{Type: "grant", Data: b}); !strings.Contains(got, "grant grt_c issued by grant:grt_p") ||
		!strings.Contains(got, "carved out of grt_p") || !strings.Contains(got, "5 steps") {
		t.Fatalf("%q", got)
	}
	b, _ = json.Marshal(map[string]any{"op": "revoke", "id": "grt_c", "revoked": map[string]any{"by": "ann", "reason": "enough"}})
	if got := describe(store.AuditRecord{Type: "grant", Data: b}); got != "grant grt_c revoked by ann: enough" {
		t.Fatalf("%q", got)
	}
	b, _ = json.Marshal(map[string]any{"source": map[string]any{"file": "/x/rollout.jsonl", "line": 9},
		"change": map[string]any{"path": "/p/app.txt", "patch_sha256": "ab"}})
	if got := describe(store.AuditRecord{Type: "ingested_result", ActionID: "act_1", Data: b}); got !=
		"result of act_1 (ingested from rollout.jsonl:9); patched /p/app.txt (can be rolled back)" {
		t.Fatalf("%q", got)
	}
	v := action.Verdict{Level: action.Confirm, Reasons: []action.Reason{
		{Layer: "L3", Source: action.SourceGrant, Name: "grant-edge:grt_c", Level: action.Confirm, Message: "x"},
		{Layer: "L3", Source: action.SourceGuard, Name: "conflicts.other-session", Level: action.Confirm, Message: "y"}}}
	b, _ = json.Marshal(v)
	if got := describe(store.AuditRecord{Type: "verdict", Tool: "Edit", Data: b}); !strings.Contains(got, "at the edge of grant grt_c") ||
		!strings.Contains(got, "conflict") {
		t.Fatalf("%q", got)
	}
	b, _ = json.Marshal(map[string]any{"event": "created", "task_id": "t1", "goal": "fix\x1b]52;c;eA==\x07 it"})
	if got := describe(store.AuditRecord{Type: "task", Data: b}); got != "task t1 created: fix]52;c;eA== it" {
		t.Fatalf("%q", got)
	}
	// A live action's command with a terminal escape reaches no terminal.
	a, _ := json.Marshal(action.Action{Tool: "Bash", Args: map[string]any{"command": "echo \x1b[2Jhi"}})
	if got := describe(store.AuditRecord{Type: "action", Tool: "Bash", Data: a}); strings.ContainsRune(got, 0x1b) {
		t.Fatalf("%q", got)
	}
}
