package hooks

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	pre := func(agent, name string) *Event {
		return &Event{Agent: agent, Name: name, Phase: PhasePre, ToolName: "Bash"}
	}
	post := func(agent, name string) *Event {
		return &Event{Agent: agent, Name: name, Phase: PhasePost, ToolName: "Bash"}
	}
	tests := []struct {
		name   string
		ev     *Event
		d      Decision
		stdout string // exact JSON, "" for no output
		code   int
	}{
		{"claude allow", pre(ClaudeCode, "PreToolUse"), Decision{Outcome: Allow, Reason: "allowed (auto)"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"Overseer: allowed (auto)"}}`, 0},
		{"claude deny", pre(ClaudeCode, "PreToolUse"), Decision{Outcome: Deny, Reason: "blocked: x"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Overseer: blocked: x"}}`, 0},
		{"claude ask", pre(ClaudeCode, "PreToolUse"), Decision{Outcome: Ask, Reason: "confirm"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"Overseer: confirm"}}`, 0},
		{"claude deny without reason still has one", pre(ClaudeCode, "PreToolUse"), Decision{},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Overseer: denied (no reason given)"}}`, 0},
		{"claude permission request allow", pre(ClaudeCode, "PermissionRequest"), Decision{Outcome: Allow},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`, 0},
		{"claude permission request deny", pre(ClaudeCode, "PermissionRequest"), Decision{Reason: "no"},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"Overseer: no"}}}`, 0},
		{"claude permission request ask shows the dialog", pre(ClaudeCode, "PermissionRequest"), Decision{Outcome: Ask}, ``, 0},
		{"claude post", post(ClaudeCode, "PostToolUse"), Decision{}, ``, 0},
		{"codex allow is silent", pre(Codex, "PreToolUse"), Decision{Outcome: Allow}, ``, 0},
		{"codex deny", pre(Codex, "PreToolUse"), Decision{Reason: "blocked: rm"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Overseer: blocked: rm"}}`, 0},
		{"codex ask is a deny", pre(Codex, "PreToolUse"), Decision{Outcome: Ask, Reason: "confirm"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Overseer: confirm"}}`, 0},
		{"codex permission request deny", pre(Codex, "PermissionRequest"), Decision{Reason: "no"},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"Overseer: no"}}}`, 0},
		{"codex permission request ask is a deny", pre(Codex, "PermissionRequest"), Decision{Outcome: Ask, Reason: "c"},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"Overseer: c"}}}`, 0},
		{"codex post", post(Codex, "PostToolUse"), Decision{}, ``, 0},
		{"gemini allow", pre(Gemini, "BeforeTool"), Decision{Outcome: Allow}, `{"decision":"allow"}`, 0},
		{"gemini deny", pre(Gemini, "BeforeTool"), Decision{Reason: "blocked"}, `{"decision":"deny","reason":"Overseer: blocked"}`, 0},
		{"gemini ask", pre(Gemini, "BeforeTool"), Decision{Outcome: Ask, Reason: "c"}, `{"decision":"ask","reason":"Overseer: c"}`, 0},
		{"gemini post", post(Gemini, "AfterTool"), Decision{}, `{}`, 0},
		{"claude abort stops the task", pre(ClaudeCode, "PreToolUse"), Decision{Reason: "aborted", Stop: true},
			`{"continue":false,"stopReason":"Overseer: aborted","hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Overseer: aborted"}}`, 0},
		{"gemini abort stops the task", pre(Gemini, "BeforeTool"), Decision{Reason: "aborted", Stop: true},
			`{"decision":"deny","reason":"Overseer: aborted","continue":false,"stopReason":"Overseer: aborted"}`, 0},
		{"codex abort is a deny", pre(Codex, "PreToolUse"), Decision{Reason: "aborted", Stop: true},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Overseer: aborted"}}`, 0},
		{"no event", nil, Decision{Reason: "bad input"}, ``, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Render(tc.ev, tc.d)
			if r.Code != tc.code {
				t.Fatalf("code %d, want %d", r.Code, tc.code)
			}
			if got := strings.TrimSpace(string(r.Stdout)); got != tc.stdout {
				t.Fatalf("stdout\n got %s\nwant %s", got, tc.stdout)
			}
			if got := strings.TrimSpace(string(r.Stdout)); got != "" && !json.Valid([]byte(got)) {
				t.Fatalf("stdout is not JSON: %s", got)
			}
			if r.Code == 2 && strings.TrimSpace(r.Stderr) == "" {
				t.Fatal("exit 2 needs a reason on stderr (Codex ignores a block without one)")
			}
		})
	}
}

func TestFailureIsExit2WithReason(t *testing.T) {
	for _, reason := range []string{"", "  ", "daemon gone", "Overseer: already prefixed"} {
		r := Failure(reason)
		if r.Code != 2 || len(r.Stdout) != 0 || !strings.HasPrefix(r.Stderr, "Overseer: ") || strings.Count(r.Stderr, "Overseer: ") != 1 {
			t.Errorf("Failure(%q) = %+v", reason, r)
		}
	}
}
