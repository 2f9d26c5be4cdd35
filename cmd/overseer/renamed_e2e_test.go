package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// lenientPolicy is the policy an agent would judge its own calls by.
const lenientPolicy = `version: 1
extends: none
defaults: {file_read: auto, file_write: auto, file_edit: auto, file_delete: auto, shell: auto, net_fetch: auto, sql: auto, mcp: auto, prompt: auto, other: auto}
`

// agentShell runs script with sh in dir as an agent's shell tool does
// (Claude Code's marker in the environment, the agent's OVERSEER_HOME), and
// returns its exit status and output.
func agentShell(t *testing.T, home, dir, script string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OVERSEER_HOME="+home, "CLAUDECODE=1", "OVERSEER_BIN="+overseertest.Binary(t))
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s under an agent still runs after 30s (a daemon serving the agent's policy?): %s", script, out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// judgeShell asks the shell guard, through `overseer eval`, what it makes
// of an agent's command.
func judgeShell(t *testing.T, home, cwd, command string) string {
	t.Helper()
	a, _ := json.Marshal(map[string]any{"tool": "Bash", "kind": "shell", "agent": "claude-code", "cwd": cwd,
		"args": map[string]any{"command": command}})
	r := overseertest.Run(t, home, string(a), "eval")
	var v struct {
		Level string `json:"level"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil {
		t.Fatalf("eval: %v: %s %s", err, r.Stdout, r.Stderr)
	}
	return v.Level
}

// TestRenamedCopyRefusedUnderAgent: the shell guard knows the overseer CLI
// by its name, and lets an agent copy a program and run the copy (a
// program of the working tree). A copy of Overseer's binary must not do
// what the name is refused: with no daemon running, a daemon the agent
// starts from the copy with its own policy judged every later call of
// every agent by that policy (a deletion outside the project, which needs
// a person, ran); `agent promote` gave it auto-approval; `init` rewrote
// the hooks with the agent's policy. The binary refuses each under an
// agent whatever it is called. The harmless twins: the copy's read-only
// commands, and the hook, still run under the agent.
func TestRenamedCopyRefusedUnderAgent(t *testing.T) {
	home := t.TempDir()
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "p.yaml"), []byte(lenientPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	// The guard lets the copy and its run through without a person.
	for _, c := range []string{`cp "$(command -v overseer)" ./ov`, `./ov serve --policy ./p.yaml`,
		`./ov agent promote claude-code --to supervised --tools Bash`} {
		if lvl := judgeShell(t, home, proj, c); lvl == "block" || lvl == "approve" {
			t.Logf("the shell guard now stops %q (%s): the binary's own refusal is the second line", c, lvl)
		}
	}
	if code, out := agentShell(t, home, proj, `cp "$OVERSEER_BIN" ./ov`); code != 0 {
		t.Fatalf("copying: %d %s", code, out)
	}
	for _, args := range []string{
		"serve --addr 127.0.0.1:0 --policy ./p.yaml",
		"--policy ./p.yaml serve --addr 127.0.0.1:0",
		"agent promote claude-code --to delegated",
		"--policy ./p.yaml init claude-code --project .",
		"undo act_x",
		"rules remove some-rule",
		"mcp accept srv tool",
		"audit key --forget",
		"watch tmux",
	} {
		code, out := agentShell(t, home, proj, "exec ./ov "+args+" </dev/null")
		if code != 4 || !strings.Contains(out, "running under an AI agent") {
			t.Errorf("./ov %s under an agent: exit %d, %s; want the refusal", args, code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "daemon.json")); err == nil {
		t.Fatal("a daemon started from the agent's copy")
	}
	if _, err := os.Stat(filepath.Join(proj, ".claude", "settings.json")); err == nil {
		t.Fatal("the agent's copy installed hooks")
	}
	// Every later call is still judged by Overseer's policy: a deletion
	// outside the project needs a person, whom no daemon can ask.
	ev := fmt.Sprintf(`{"session_id":"ren","cwd":%q,"hook_event_name":"PreToolUse","tool_name":"Bash",`+
		`"tool_input":{"command":"rm -rf /srv/other"},"tool_use_id":"tu-%d"}`, proj, time.Now().UnixNano())
	hook := exec.Command(overseertest.HookBinary(t), "hook", "claude-code", "--max-wait", "2s")
	hook.Env = append(os.Environ(), "OVERSEER_HOME="+home)
	hook.Stdin = strings.NewReader(ev)
	out, err := hook.Output()
	if err != nil {
		t.Fatalf("hook: %v %s", err, out)
	}
	if !strings.Contains(string(out), `"permissionDecision":"deny"`) {
		t.Fatalf("the deletion outside the project: %s", out)
	}

	// The twins: what an agent may run still runs from the copy, and the
	// hook (which the agent's own program runs) still judges.
	for _, args := range []string{"version", "policy test", "approvals", "audit verify"} {
		if code, out := agentShell(t, home, proj, "./ov "+args); code == 4 || strings.Contains(out, "running under an AI agent") {
			t.Errorf("./ov %s under an agent: refused: %s", args, out)
		}
	}
	ev = fmt.Sprintf(`{"session_id":"ren","cwd":%q,"hook_event_name":"PreToolUse","tool_name":"Bash",`+
		`"tool_input":{"command":"ls"},"tool_use_id":"tu-%d"}`, proj, time.Now().UnixNano())
	h := exec.Command(filepath.Join(proj, "ov"), "hook", "claude-code", "--max-wait", "2s")
	h.Env = append(os.Environ(), "OVERSEER_HOME="+home, "CLAUDECODE=1")
	h.Stdin = strings.NewReader(ev)
	h.Stderr = io.Discard
	if out, err := h.Output(); err != nil || !strings.Contains(string(out), `"permissionDecision":"allow"`) {
		t.Fatalf("the hook under the agent: %v %s", err, out)
	}
}

// TestBuildIntoBinaryDirDenied: the lean hook entry execs `overseer` next
// to it, and the hook commands name one of the two, so an agent that
// builds or copies a program of that name into their directory switches
// Overseer off. The guard knew only the files by their paths; a build into
// the directory (`go build -o DIR/ ./cmd/overseer`, `GOBIN=DIR go install`)
// or a copy of a directory's contents, a computed name or a glob wrote
// them unseen. Judged end to end: the real daemon, the lean hook, the
// agent's events. The twins (the same into the project) are allowed.
func TestBuildIntoBinaryDirDenied(t *testing.T) {
	home := t.TempDir()
	proj := t.TempDir()
	overseertest.StartDaemon(t, home)
	bin := filepath.Dir(overseertest.Binary(t))
	hook := func(command string) string {
		t.Helper()
		ev, _ := json.Marshal(map[string]any{"session_id": "bin", "cwd": proj, "hook_event_name": "PreToolUse",
			"tool_name": "Bash", "tool_input": map[string]any{"command": command}, "tool_use_id": fmt.Sprintf("tu-%d", time.Now().UnixNano())})
		cmd := exec.Command(overseertest.HookBinary(t), "hook", "claude-code", "--max-wait", "2s")
		cmd.Env = append(os.Environ(), "OVERSEER_HOME="+home)
		cmd.Stdin = strings.NewReader(string(ev))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hook: %v %s", err, out)
		}
		return string(out)
	}
	for _, c := range []string{
		"go build -o " + bin + "/ ./cmd/overseer",
		"GOBIN=" + bin + " go install ./cmd/overseer",
		"cd " + bin + " && go build " + proj + "/cmd/overseer",
		"cp -r ./stage/. " + bin + "/",
		`cp "$f" ` + bin + "/",
		"cp ./stage/* " + bin + "/",
	} {
		if out := hook(c); !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "control file") && !strings.Contains(out, "holds control files") {
			t.Errorf("%s: %s", c, out)
		}
	}
	for _, c := range []string{"go build -o bin/ ./cmd/overseer", "cp -r ./stage/. ./out/", "go build ./..."} {
		if out := hook(c); !strings.Contains(out, `"permissionDecision":"allow"`) {
			t.Errorf("twin %s: %s", c, out)
		}
	}
}

// TestMCPServerListProtected: the project's .mcp.json names the gateway
// (`overseer mcp`) and every MCP server Claude Code starts; an agent that
// rewrote it (the gateway's arguments pointed at its own policy, or another
// server) changed what runs outside Overseer at the next start, and was not
// asked. Judged end to end through the lean hook; the twin (a file of that
// name elsewhere) is allowed.
func TestMCPServerListProtected(t *testing.T) {
	home := t.TempDir()
	proj := t.TempDir()
	overseertest.StartDaemon(t, home)
	write := func(p string) string {
		t.Helper()
		ev, _ := json.Marshal(map[string]any{"session_id": "mcpj", "cwd": proj, "hook_event_name": "PreToolUse",
			"tool_name": "Write", "tool_input": map[string]any{"file_path": p,
				"content": `{"mcpServers":{"overseer":{"command":"overseer","args":["--policy","mine.yaml","mcp"]}}}`},
			"tool_use_id": fmt.Sprintf("tu-%d", time.Now().UnixNano())})
		cmd := exec.Command(overseertest.HookBinary(t), "hook", "claude-code", "--max-wait", "2s")
		cmd.Env = append(os.Environ(), "OVERSEER_HOME="+home)
		cmd.Stdin = strings.NewReader(string(ev))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hook: %v %s", err, out)
		}
		return string(out)
	}
	if out := write(filepath.Join(proj, ".mcp.json")); !strings.Contains(out, `"permissionDecision":"deny"`) {
		t.Errorf("writing .mcp.json: %s", out)
	}
	if out := write(filepath.Join(proj, "docs", "mcp.json")); !strings.Contains(out, `"permissionDecision":"allow"`) {
		t.Errorf("twin docs/mcp.json: %s", out)
	}
}
