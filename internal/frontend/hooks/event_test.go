package hooks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
)

// eventCase is one recorded-shape event in testdata/events and what it must
// parse and map to.
type eventCase struct {
	file      string
	agent     string
	phase     Phase
	kind      action.Kind
	tool      string
	session   string
	toolUseID string
	cwd       string
	intent    string
	arg       string // an argument the action must carry, key=value
}

var eventCases = []eventCase{
	{file: "claude-code-pre-bash.json", agent: ClaudeCode, phase: PhasePre, kind: action.KindShell, tool: "Bash",
		session: "9b1c1f0e-2f7a-4c51-9d55-0d6f3c1a7e21", toolUseID: "toolu_01ABC", cwd: "/src/app",
		intent: "List the files", arg: "command=ls -la"},
	{file: "claude-code-post-bash.json", agent: ClaudeCode, phase: PhasePost, kind: action.KindShell, tool: "Bash",
		toolUseID: "toolu_01ABC", cwd: "/src/app", intent: "List the files", arg: "command=ls -la"},
	{file: "claude-code-pre-write.json", agent: ClaudeCode, phase: PhasePre, kind: action.KindFileWrite, tool: "Write",
		toolUseID: "toolu_02", cwd: "/src/app", arg: "file_path=notes/todo.md"},
	{file: "claude-code-pre-mcp.json", agent: ClaudeCode, phase: PhasePre, kind: action.KindMCP,
		tool: "mcp__github__create_issue", toolUseID: "toolu_03", arg: "title=bug"},
	{file: "claude-code-permission-request.json", agent: ClaudeCode, phase: PhasePre, kind: action.KindShell, tool: "Bash",
		arg: "command=npm test"},
	{file: "claude-code-post-failure.json", agent: ClaudeCode, phase: PhasePost, kind: action.KindShell, tool: "Bash",
		toolUseID: "toolu_04"},
	{file: "codex-pre-bash.json", agent: Codex, phase: PhasePre, kind: action.KindShell, tool: "Bash",
		session: "019a7c1e-5b2d-7e30-a1f4-3c9d2e8b6f10", toolUseID: "call_abc123", arg: "command=cargo test"},
	{file: "codex-post-bash.json", agent: Codex, phase: PhasePost, kind: action.KindShell, tool: "Bash", toolUseID: "call_abc123"},
	{file: "codex-permission-request.json", agent: Codex, phase: PhasePre, kind: action.KindShell, tool: "Bash",
		toolUseID: "call_9", arg: "command=git push"},
	{file: "codex-pre-apply-patch.json", agent: Codex, phase: PhasePre, kind: action.KindFileEdit, tool: "apply_patch",
		toolUseID: "call_10", arg: "input=*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch"},
	{file: "gemini-before-shell.json", agent: Gemini, phase: PhasePre, kind: action.KindShell, tool: "run_shell_command",
		session: "c0ffee00-1111-2222-3333-444455556666", cwd: "/src/app/web", intent: "Build the project", arg: "command=npm run build"},
	{file: "gemini-before-read.json", agent: Gemini, phase: PhasePre, kind: action.KindFileRead, tool: "read_file",
		arg: "file_path=/src/app/README.md"},
	{file: "gemini-before-mcp.json", agent: Gemini, phase: PhasePre, kind: action.KindMCP, tool: "mcp__db__query", arg: "sql=select 1"},
	{file: "gemini-after-shell.json", agent: Gemini, phase: PhasePost, kind: action.KindShell, tool: "run_shell_command",
		intent: "Build the project"},
	{file: "gemini-after-error.json", agent: Gemini, phase: PhasePost, kind: action.KindFileRead, tool: "read_file"},
}

func readEvent(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseRecordedEvents(t *testing.T) {
	for _, tc := range eventCases {
		t.Run(tc.file, func(t *testing.T) {
			ev, err := ParseEvent(tc.agent, readEvent(t, tc.file))
			if err != nil {
				t.Fatalf("ParseEvent: %v", err)
			}
			if ev.Phase != tc.phase || ev.ToolName != tc.tool || ev.ToolUseID != tc.toolUseID {
				t.Fatalf("got phase %v tool %q id %q, want %v %q %q", ev.Phase, ev.ToolName, ev.ToolUseID, tc.phase, tc.tool, tc.toolUseID)
			}
			tab, err := NewTable(nil)
			if err != nil {
				t.Fatal(err)
			}
			a := tab.Action(ev)
			if a.Kind != tc.kind || a.Agent != tc.agent || a.Tool != tc.tool {
				t.Errorf("action kind %q agent %q tool %q, want %q %q %q", a.Kind, a.Agent, a.Tool, tc.kind, tc.agent, tc.tool)
			}
			if tc.session != "" && a.Session != tc.session {
				t.Errorf("session %q, want %q", a.Session, tc.session)
			}
			if tc.cwd != "" && a.Cwd != tc.cwd {
				t.Errorf("cwd %q, want %q", a.Cwd, tc.cwd)
			}
			if a.Intent != tc.intent {
				t.Errorf("intent %q, want %q", a.Intent, tc.intent)
			}
			if a.ToolUseID != tc.toolUseID {
				t.Errorf("tool_use_id %q, want %q", a.ToolUseID, tc.toolUseID)
			}
			if (a.ClientID != "") != (tc.toolUseID != "") || a.ID != "" {
				t.Errorf("action id %q, client id %q: the call id is derived iff the agent sent a tool-use id, the id is Overseer's", a.ID, a.ClientID)
			}
			if tc.arg != "" {
				k, v, _ := strings.Cut(tc.arg, "=")
				if got, _ := a.Args[k].(string); got != v {
					t.Errorf("args[%s] = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestParseEventErrors(t *testing.T) {
	tests := []struct {
		name, agent, in string
		want            error
	}{
		{"empty", ClaudeCode, "", ErrEmptyInput},
		{"blank", Codex, " \n\t", ErrEmptyInput},
		{"not json", ClaudeCode, "rm -rf /", ErrBadInput},
		{"array", Gemini, `[1,2]`, ErrBadInput},
		{"truncated", ClaudeCode, `{"hook_event_name":"PreToolUse","tool_name":"Bash"`, ErrBadInput},
		{"trailing data", ClaudeCode, `{"hook_event_name":"PreToolUse","tool_name":"Bash"} {}`, ErrBadInput},
		{"no event name", ClaudeCode, `{"tool_name":"Bash","tool_input":{"command":"ls"}}`, ErrUnknownEvent},
		{"unknown event", ClaudeCode, `{"hook_event_name":"Stop","tool_name":"Bash"}`, ErrUnknownEvent},
		{"other agent's event", Gemini, `{"hook_event_name":"PreToolUse","tool_name":"Bash"}`, ErrUnknownEvent},
		{"codex has no failure event", Codex, `{"hook_event_name":"PostToolUseFailure","tool_name":"Bash"}`, ErrUnknownEvent},
		{"no tool", Codex, `{"hook_event_name":"PreToolUse","tool_input":{"command":"ls"}}`, ErrNoTool},
		{"blank tool", Codex, `{"hook_event_name":"PreToolUse","tool_name":"  "}`, ErrNoTool},
		{"event name wrong type", ClaudeCode, `{"hook_event_name":7,"tool_name":"Bash"}`, ErrBadInput},
		{"bad tool_input", ClaudeCode, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":}}`, ErrBadInput},
		{"unknown agent", "cursor", `{"hook_event_name":"PreToolUse","tool_name":"Bash"}`, ErrUnknownAgent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := ParseEvent(tc.agent, []byte(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("ParseEvent = %+v, %v; want %v", ev, err, tc.want)
			}
		})
	}
}

func TestParseEventToleratesUnknownFields(t *testing.T) {
	in := `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},` +
		`"future_field":{"nested":[1,2,3]},"effort":"high","tool_use_id":"t","session_id":"s"}`
	ev, err := ParseEvent(ClaudeCode, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if ev.ToolInput["command"] != "ls" || ev.SessionID != "s" {
		t.Fatalf("got %+v", ev)
	}
}

func TestActionIDPairsPreAndPost(t *testing.T) {
	tab, _ := NewTable(nil)
	pre, err := ParseEvent(ClaudeCode, readEvent(t, "claude-code-pre-bash.json"))
	if err != nil {
		t.Fatal(err)
	}
	post, err := ParseEvent(ClaudeCode, readEvent(t, "claude-code-post-bash.json"))
	if err != nil {
		t.Fatal(err)
	}
	if a, id := tab.Action(pre), ActionID(post); a.ClientID == "" || a.ClientID != id {
		t.Fatalf("pre call id %q, post %q", a.ClientID, id)
	}
	other := *pre
	other.Agent = Codex
	if ActionID(&other) == ActionID(pre) {
		t.Fatal("the same tool-use id of another agent must name another action")
	}
}

func FuzzParseEvent(f *testing.F) {
	for _, tc := range eventCases {
		f.Add(tc.agent, readEvent(f, tc.file))
	}
	f.Add(ClaudeCode, []byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"x"}`))
	f.Add(Gemini, []byte(`{}`))
	tab, _ := NewTable(nil)
	f.Fuzz(func(t *testing.T, agent string, data []byte) {
		ev, err := ParseEvent(agent, data)
		if err != nil {
			if ev != nil {
				t.Fatal("an error must come without an event")
			}
			return
		}
		if ev.Phase != PhasePre && ev.Phase != PhasePost {
			t.Fatalf("phase %v", ev.Phase)
		}
		if strings.TrimSpace(ev.ToolName) == "" || ev.ToolInput == nil {
			t.Fatalf("parsed event without tool or input: %+v", ev)
		}
		a := tab.Action(ev)
		if !a.Kind.Valid() {
			t.Fatalf("kind %q", a.Kind)
		}
		// Whatever the event, its answer is 0 or 2.
		for _, o := range []Outcome{Allow, Deny, Ask} {
			if r := Render(ev, Decision{Outcome: o}); r.Code != 0 && r.Code != 2 {
				t.Fatalf("exit status %d", r.Code)
			}
		}
		_, _ = ResultOf(ev)
	})
}
