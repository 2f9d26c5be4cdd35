package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hookPolicy gives a few shell commands known levels.
const hookPolicy = `version: 1
rules:
  - name: hook-echo-auto
    kind: shell
    when: 'args.command.startsWith("echo ")'
    level: auto
  - name: hook-rm-block
    kind: shell
    when: 'args.command.contains("rm -rf")'
    level: block
    message: recursive deletes are blocked
  - name: hook-make-confirm
    kind: shell
    when: 'args.command.startsWith("make")'
    level: confirm
`

func hookHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "policy.yaml"), []byte(hookPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func runHookCLI(t *testing.T, home, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := Main(ctx, append([]string{"--home", home}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func bashEvent(cmd string) string {
	return `{"session_id":"s","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash",` +
		`"tool_input":{"command":"` + cmd + `"},"tool_use_id":"tu-` + strings.ReplaceAll(cmd, " ", "-") + `"}`
}

func TestHookCommand(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stdin  string
		setup  func(t *testing.T, home string)
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{name: "auto without a daemon runs in process", args: []string{"hook", "claude-code"}, stdin: bashEvent("echo hi"),
			stdout: `"permissionDecision":"allow"`},
		{name: "block without a daemon", args: []string{"hook", "claude-code"}, stdin: bashEvent("rm -rf /tmp/v"),
			stdout: `recursive deletes are blocked`},
		{name: "needs a person without a daemon", args: []string{"hook", "codex"}, stdin: bashEvent("make all"),
			stdout: "overseer serve"},
		{name: "a stale daemon address falls back to the process", args: []string{"hook", "claude-code"}, stdin: bashEvent("echo hi"),
			setup: func(t *testing.T, home string) {
				_ = os.WriteFile(filepath.Join(home, "daemon.json"), []byte(`{"addr":"127.0.0.1:1","pid":1}`), 0o600)
			}, stdout: `"permissionDecision":"allow"`},
		{name: "post event", args: []string{"hook", "codex"},
			stdin: `{"session_id":"s","cwd":"/tmp","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"echo hi"},"tool_response":"hi","tool_use_id":"x"}`},
		{name: "unknown agent", args: []string{"hook", "cursor"}, stdin: bashEvent("echo hi"), code: 2, stderr: "usage"},
		{name: "no agent", args: []string{"hook"}, stdin: bashEvent("echo hi"), code: 2, stderr: "usage"},
		{name: "two agents", args: []string{"hook", "codex", "gemini"}, stdin: bashEvent("echo hi"), code: 2, stderr: "usage"},
		{name: "unknown flag", args: []string{"hook", "claude-code", "--bogus"}, stdin: bashEvent("echo hi"), code: 2, stderr: "denied"},
		{name: "bad flag value", args: []string{"hook", "claude-code", "--max-wait", "soon"}, stdin: bashEvent("echo hi"), code: 2, stderr: "denied"},
		{name: "bad confirm mode", args: []string{"hook", "claude-code", "--confirm", "maybe"}, stdin: bashEvent("echo hi"), code: 2, stderr: "--confirm"},
		{name: "empty input", args: []string{"hook", "gemini"}, stdin: "", code: 2, stderr: "no hook event"},
		{name: "garbage input", args: []string{"hook", "claude-code"}, stdin: "\x00\x01garbage", code: 2, stderr: "not valid JSON"},
		{name: "invalid hooks.yaml", args: []string{"hook", "claude-code"}, stdin: bashEvent("echo hi"), code: 2, stderr: "hooks.yaml",
			setup: func(t *testing.T, home string) {
				_ = os.WriteFile(filepath.Join(home, "hooks.yaml"), []byte("confirm: hold\nsurprise: 1\n"), 0o600)
			}},
		{name: "hooks.yaml extends the tool table", args: []string{"hook", "claude-code"}, stdout: `recursive deletes are blocked`,
			stdin: `{"session_id":"s","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"RunIt","tool_input":{"command":"rm -rf x"},"tool_use_id":"r"}`,
			setup: func(t *testing.T, home string) {
				_ = os.WriteFile(filepath.Join(home, "hooks.yaml"), []byte("tools:\n  claude-code:\n    RunIt: {kind: shell}\n"), 0o600)
			}},
		{name: "confirm handed to Claude Code's prompt", args: []string{"hook", "claude-code", "--confirm", "ask"},
			stdin: bashEvent("make all"), stdout: `"permissionDecision":"ask"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home := hookHome(t)
			if tc.setup != nil {
				tc.setup(t, home)
			}
			code, out, errOut := runHookCLI(t, home, tc.stdin, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.code, out, errOut)
			}
			if !strings.Contains(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
				t.Fatalf("stdout %q (want %q)\nstderr %q (want %q)", out, tc.stdout, errOut, tc.stderr)
			}
			if code == 2 && strings.TrimSpace(errOut) == "" {
				t.Fatal("exit 2 without a reason")
			}
		})
	}
}
