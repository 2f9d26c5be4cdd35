package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/agent/task"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/plugin"
)

func TestParseSubTaskArgs(t *testing.T) {
	known := map[string]plugin.Tool{"file_read": nil, "bash": nil}
	a, err := parseSubTaskArgs(map[string]any{"goal": " g ", "tools": []any{"file_read", "file_read"}}, known)
	if err != nil || a.Goal != "g" || len(a.Tools) != 1 || a.Steps != defaultSubTaskSteps {
		t.Fatalf("%+v %v", a, err)
	}
	for name, args := range map[string]map[string]any{
		"no goal":        {"tools": []any{"bash"}},
		"no tools":       {"goal": "g"},
		"unknown tool":   {"goal": "g", "tools": []any{"rm"}},
		"nested":         {"goal": "g", "tools": []any{"subtask"}},
		"too many steps": {"goal": "g", "tools": []any{"bash"}, "steps": 51.0},
		"half a step":    {"goal": "g", "tools": []any{"bash"}, "steps": 1.5},
		"steps as text":  {"goal": "g", "tools": []any{"bash"}, "steps": "9"},
		"tool not text":  {"goal": "g", "tools": []any{7.0}},
	} {
		if _, err := parseSubTaskArgs(args, known); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestSubTaskGrantIsCarvedOut: the sub-task's grant is the parent's
// permits narrowed to its tools, and never more budget than the parent
// has left.
func TestSubTaskGrantIsCarvedOut(t *testing.T) {
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	parent := &kernel.Grant{ID: "grt_p", Spec: grant.Spec{
		Subject: grant.Subject{Agent: "overseer"},
		Allow: []grant.Permit{
			{Tools: []string{"file_*", "subtask"}, Under: []string{"/w/docs"}},
			{Kinds: []action.Kind{action.KindShell}, ReadOnly: true},
			{Tools: []string{"web_fetch"}},
		},
		Budget:  grant.Budget{Steps: 10, Tokens: 1000, CostUSD: 1, WallTime: grant.Duration(time.Hour)},
		Expires: now.Add(2 * time.Hour),
	}}
	child := &task.Task{ID: "t2", Parent: "t1", Session: "t1", Goal: "g", MaxSteps: 50, Tools: []string{"file_read", "bash"}}
	spec, err := subTaskGrant(parent, kernel.GrantUsage{Steps: 4, Tokens: 300, CostUSD: 0.25}, child, now)
	if err != nil {
		t.Fatal(err)
	}
	if s := spec.Subject; s.Agent != "overseer" || s.Session != "t1" || s.SubagentType != grant.SubTaskType || s.SubagentID != "t2" {
		t.Fatalf("subject %+v", s)
	}
	if len(spec.Allow) != 2 || strings.Join(spec.Allow[0].Tools, ",") != "file_read" || spec.Allow[0].Under[0] != "/w/docs" ||
		strings.Join(spec.Allow[1].Tools, ",") != "file_read,bash" || !spec.Allow[1].ReadOnly {
		t.Fatalf("permits %+v", spec.Allow)
	}
	if b := spec.Budget; b.Steps != 6 || b.Tokens != 700 || b.CostUSD != 0.75 || b.WallTime != parent.Budget.WallTime {
		t.Fatalf("budget %+v", b)
	}
	if !spec.Expires.Equal(parent.Expires) {
		t.Fatalf("expires %s", spec.Expires)
	}
	// What the grant package checks agrees.
	if err := grant.WithinAsSubTask(&spec, parent, kernel.GrantUsage{Steps: 4, Tokens: 300, CostUSD: 0.25}); err != nil {
		t.Fatalf("not within the parent: %v", err)
	}
	for name, used := range map[string]kernel.GrantUsage{
		"no steps left":  {Steps: 10},
		"no tokens left": {Tokens: 1000},
		"no money left":  {CostUSD: 1},
	} {
		if _, err := subTaskGrant(parent, used, child, now); err == nil {
			t.Errorf("%s: carved", name)
		}
	}
	other := *child
	other.Tools = []string{"sql_query"}
	named := *parent
	named.Allow = []grant.Permit{parent.Allow[0], parent.Allow[2]} // permits that name their tools
	if _, err := subTaskGrant(&named, kernel.GrantUsage{}, &other, now); err == nil {
		t.Error("a sub-task with none of the parent's tools got a grant")
	}
	if _, err := subTaskGrant(parent, kernel.GrantUsage{}, child, now.Add(3*time.Hour)); err == nil {
		t.Error("an expired parent gave a grant")
	}
}
