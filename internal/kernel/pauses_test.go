package kernel_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

var reads int

// read is a read of a new file (the same call repeated would be a loop).
func read(agent string) *action.Action {
	reads++
	return &action.Action{Tool: "Read", Agent: agent, Session: "s1", Cwd: "/proj",
		Args: map[string]any{"file_path": fmt.Sprintf("/proj/f%d.go", reads)}}
}

// pauseRecords returns the data of the pause records, in order.
func pauseRecords(t *testing.T, k *kernel.Kernel) []kernel.PauseRecord {
	t.Helper()
	recs, err := k.Store.QueryAudit(context.Background(), store.AuditQuery{Types: []string{kernel.TypeAgentPaused, kernel.TypeAgentResumed}})
	if err != nil {
		t.Fatal(err)
	}
	var out []kernel.PauseRecord
	for _, r := range recs {
		var pr kernel.PauseRecord
		if err := json.Unmarshal(r.Data, &pr); err != nil {
			t.Fatal(err)
		}
		out = append(out, pr)
	}
	return out
}

func TestPauseAgent(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	if sub, err := k.Submit(ctx, read("codex")); err != nil || sub.Verdict.Level != action.Auto {
		t.Fatalf("before the pause: %v, %v", sub, err)
	}
	if err := k.PauseAgent(ctx, "codex", "too many calls at night", "ann"); err != nil {
		t.Fatal(err)
	}
	if p, why := k.AgentPaused("codex"); !p || why != "too many calls at night" {
		t.Fatalf("AgentPaused = %v, %q", p, why)
	}
	if p, _ := k.AgentPaused("claude-code"); p {
		t.Fatal("another agent is paused too")
	}
	sub, err := k.Submit(ctx, read("codex"))
	if err != nil {
		t.Fatal(err)
	}
	v := sub.Verdict
	if v.Level != action.Block || !v.Stop || v.Decider == nil || v.Decider.Source != action.SourcePaused || sub.Approval != nil {
		t.Fatalf("a paused agent's call: %s stop=%v decider %+v", v.Level, v.Stop, v.Decider)
	}
	for _, want := range []string{"too many calls at night", "by ann", "overseer resume-agent codex", "Resume button"} {
		if !strings.Contains(v.Summary(), want) {
			t.Errorf("the refusal %q does not say %q", v.Summary(), want)
		}
	}
	if sub, _ := k.Submit(ctx, read("claude-code")); sub.Verdict.Level != action.Auto {
		t.Fatalf("another agent: %s", sub.Verdict.Level)
	}
	list, err := k.PausedAgents(ctx)
	if err != nil || len(list) != 1 || list[0].Agent != "codex" || list[0].By != "ann" {
		t.Fatalf("PausedAgents = %+v, %v", list, err)
	}

	if err := k.ResumeAgent(ctx, "codex", "bob"); err != nil {
		t.Fatal(err)
	}
	if p, _ := k.AgentPaused("codex"); p {
		t.Fatal("still paused after the resume")
	}
	if sub, _ := k.Submit(ctx, read("codex")); sub.Verdict.Level != action.Auto {
		t.Fatalf("after the resume: %s", sub.Verdict.Level)
	}
	if err := k.ResumeAgent(ctx, "codex", "bob"); !errors.Is(err, kernel.ErrNotPaused) {
		t.Fatalf("resuming an agent that is not paused: %v", err)
	}
	recs := pauseRecords(t, k)
	if len(recs) != 2 || recs[0].Agent != "codex" || recs[0].By != "ann" || recs[0].Reason != "too many calls at night" ||
		recs[1].By != "bob" || recs[1].Lifted == nil || recs[1].Lifted.Reason != "too many calls at night" {
		t.Fatalf("audit records %+v", recs)
	}
}

func TestPauseEveryAgent(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	if err := k.PauseAgent(ctx, kernel.AllAgents, "weekend", "ann"); err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"codex", "claude-code", "overseer"} {
		sub, err := k.Submit(ctx, read(agent))
		if err != nil || sub.Verdict.Level != action.Block || !strings.Contains(sub.Verdict.Summary(), "overseer resume-agent *") {
			t.Fatalf("%s: %s (%v)", agent, sub.Verdict.Summary(), err)
		}
	}
	// Resuming one agent does not lift the pause of all.
	if err := k.ResumeAgent(ctx, "codex", "ann"); !errors.Is(err, kernel.ErrNotPaused) {
		t.Fatalf("resume codex under a pause of all: %v", err)
	}
	if err := k.ResumeAgent(ctx, kernel.AllAgents, "ann"); err != nil {
		t.Fatal(err)
	}
	if p, _ := k.AgentPaused("codex"); p {
		t.Fatal("still paused")
	}
}

func TestPauseInvalid(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	if err := k.PauseAgent(ctx, " ", "x", "ann"); err == nil {
		t.Fatal("a pause of no agent was accepted")
	}
	if err := k.PauseAgent(ctx, "codex", "x", ""); err == nil {
		t.Fatal("a pause by nobody was accepted")
	}
	if recs := pauseRecords(t, k); len(recs) != 0 {
		t.Fatalf("records %+v", recs)
	}
}

// A pause made by another process (another kernel on the same home) holds
// here once the kernel rechecks, and so does its resume.
func TestPauseSeenByOtherProcess(t *testing.T) {
	defer kernel.SetPauseRecheck(0)()
	ctx := context.Background()
	a := open(t, nil, "")
	b, err := kernel.Open(ctx, kernel.Config{Home: a.Home})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.PauseAgent(ctx, "codex", "night", "ann"); err != nil {
		t.Fatal(err)
	}
	if sub, err := b.Submit(ctx, read("codex")); err != nil || sub.Verdict.Level != action.Block {
		t.Fatalf("the other kernel: %v, %v", sub.Verdict.Level, err)
	}
	if err := b.ResumeAgent(ctx, "codex", "ann"); err != nil {
		t.Fatal(err)
	}
	if sub, err := a.Submit(ctx, read("codex")); err != nil || sub.Verdict.Level != action.Auto {
		t.Fatalf("after the other kernel resumed: %v, %v", sub.Verdict.Level, err)
	}
}

// A pause whose row is removed from the database without a resume record
// still holds: the audit log is the evidence.
func TestPauseRowRemovedHolds(t *testing.T) {
	defer kernel.SetPauseRecheck(0)()
	ctx := context.Background()
	k := open(t, nil, "")
	if err := k.PauseAgent(ctx, "codex", "night", "ann"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(k.Home, kernel.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM agent_pauses; UPDATE counters SET value = value + 1 WHERE name = 'pauses_version'`); err != nil {
		t.Fatal(err)
	}
	sub, err := k.Submit(ctx, read("codex"))
	if err != nil || sub.Verdict.Level != action.Block || !strings.Contains(sub.Verdict.Summary(), "without a resume record") {
		t.Fatalf("after the row was removed: %s (%v)", sub.Verdict.Summary(), err)
	}
}
