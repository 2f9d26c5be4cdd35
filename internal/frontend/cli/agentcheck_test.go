package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// TestMain runs the package's tests as if no agent ran them: they may be
// run from an agent's terminal, and the refusal is tested on its own.
func TestMain(m *testing.M) {
	agentCheck = func() (AgentEvidence, bool) { return AgentEvidence{}, false }
	os.Exit(m.Run())
}

// fakeProcs is a process table: pid → (ppid, comm, exe, argv).
type fakeProcs map[int]struct {
	ppid int
	comm string
	exe  string
	argv []string
}

func (f fakeProcs) Stat(pid int) (int, string, error) {
	p, ok := f[pid]
	if !ok {
		return 0, "", errors.New("no such process")
	}
	return p.ppid, p.comm, nil
}
func (f fakeProcs) Exe(pid int) string       { return f[pid].exe }
func (f fakeProcs) Cmdline(pid int) []string { return f[pid].argv }

func noEnv(string) string { return "" }

func TestDetectAgentEnv(t *testing.T) {
	for _, tc := range []struct {
		env   map[string]string
		agent string
	}{
		{map[string]string{"CLAUDECODE": "1"}, "Claude Code"},
		{map[string]string{"CLAUDE_CODE_ENTRYPOINT": "cli"}, "Claude Code"},
		{map[string]string{"GEMINI_CLI": "1"}, "Gemini CLI"},
		{map[string]string{"CODEX_SANDBOX_NETWORK_DISABLED": "1"}, "Codex"},
		{map[string]string{"CODEX_SANDBOX": "seatbelt"}, "Codex"},
		{map[string]string{"CODEX_THREAD_ID": "0199-abc"}, "Codex"},
		{map[string]string{"CODEX_MANAGED_BY_NPM": "1"}, "Codex"},
		{map[string]string{"CLAUDECODE": "0"}, ""},
		{map[string]string{"CLAUDECODE": ""}, ""},
		{map[string]string{"TERM": "xterm"}, ""},
	} {
		ev, ok := DetectAgent(func(k string) string { return tc.env[k] }, nil, 100)
		if ev.Agent != tc.agent || ok != (tc.agent != "") {
			t.Errorf("%v: got %+v %v, want %q", tc.env, ev, ok, tc.agent)
		}
	}
}

func TestDetectAgentAncestry(t *testing.T) {
	type proc = struct {
		ppid int
		comm string
		exe  string
		argv []string
	}
	base := func() fakeProcs {
		return fakeProcs{
			100: proc{50, "overseer", "/usr/bin/overseer", []string{"overseer", "approve", "x"}},
			50:  proc{40, "bash", "/usr/bin/bash", []string{"/bin/bash", "-c", "overseer approve x"}},
			30:  proc{1, "sshd", "/usr/sbin/sshd", []string{"sshd: u"}},
		}
	}
	for _, tc := range []struct {
		name  string
		agent proc
		want  string
	}{
		{"claude by comm", proc{30, "claude", "/home/u/.local/share/claude/versions/2.0.1", []string{"claude"}}, "Claude Code"},
		{"claude native, renamed comm", proc{30, "2.0.1", "/home/u/.local/share/claude/versions/2.0.1", []string{"/home/u/.local/bin/claude"}}, "Claude Code"},
		{"claude under node", proc{30, "node", "/usr/bin/node", []string{"node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"}}, "Claude Code"},
		{"codex native", proc{30, "codex-x86_64-un", "/usr/lib/node_modules/@openai/codex/bin/codex-x86_64-unknown-linux-musl", []string{"codex"}}, "Codex"},
		{"codex launcher", proc{30, "node", "/usr/bin/node", []string{"node", "/usr/bin/codex"}}, "Codex"},
		{"gemini", proc{30, "node", "/usr/bin/node", []string{"node", "--no-warnings", "/usr/lib/node_modules/@google/gemini-cli/dist/index.js"}}, "Gemini CLI"},
		{"gemini bun", proc{30, "bun", "/usr/bin/bun", []string{"bun", "/home/u/bin/gemini"}}, "Gemini CLI"},
		{"a terminal", proc{30, "tmux: server", "/usr/bin/tmux", []string{"tmux"}}, ""},
		{"node running something else", proc{30, "node", "/usr/bin/node", []string{"node", "server.js"}}, ""},
		{"vim", proc{30, "vim", "/usr/bin/vim", []string{"vim"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			procs := base()
			procs[40] = tc.agent
			ev, ok := DetectAgent(noEnv, procs, 100)
			if ev.Agent != tc.want || ok != (tc.want != "") {
				t.Fatalf("got %+v %v, want %q", ev, ok, tc.want)
			}
			if ok && !strings.Contains(ev.Why, "40") {
				t.Errorf("evidence %q does not name the process", ev.Why)
			}
		})
	}
	// A loop in the table ends the walk.
	loop := fakeProcs{100: {ppid: 50, comm: "overseer"}, 50: {ppid: 60, comm: "sh"}, 60: {ppid: 50, comm: "sh"}}
	if _, ok := DetectAgent(noEnv, loop, 100); ok {
		t.Error("a loop was taken for an agent")
	}
}

// TestAnsweringCommandsRefuseUnderAgent drives the commands in process with
// an injected detection.
func TestAnsweringCommandsRefuseUnderAgent(t *testing.T) {
	old := agentCheck
	t.Cleanup(func() { agentCheck = old })
	agentCheck = func() (AgentEvidence, bool) {
		return AgentEvidence{Agent: "Claude Code", Why: "CLAUDECODE=1 in the environment"}, true
	}
	home := t.TempDir()
	proj := t.TempDir()
	for _, args := range [][]string{
		{"approve", "apr_x"},
		{"deny", "apr_x", "--reason", "no"},
		{"init", "claude-code", "--project", proj, "--uninstall"},
		{"tui"},
		// Every command the shell guard refuses agents by name refuses
		// too, so that a renamed copy of the binary gains nothing: it
		// would judge in Overseer's place with the agent's policy, or
		// loosen it.
		{"init", "claude-code", "--project", proj},
		{"--policy", filepath.Join(proj, "p.yaml"), "serve", "--addr", "127.0.0.1:0"},
		{"agent", "promote", "claude-code", "--to", "delegated"},
		{"agent", "demote", "claude-code"},
		{"rules", "remove", "r1"},
		{"mcp", "accept", "srv", "tool"},
		{"audit", "key", "--forget"},
		{"undo", "act_x"},
		{"tool", "run", "read_file", "--args", "{}"},
	} {
		code, _, errOut := runHookCLI(t, home, "", args...)
		if code != exitRefusedUnderAgent || !strings.Contains(errOut, "running under an AI agent") ||
			!strings.Contains(errOut, "CLAUDECODE=1") || !strings.Contains(errOut, "not the agent's") {
			t.Errorf("%v: exit %d, stderr %q; want a refusal", args, code, errOut)
		}
	}
	// What an agent may run still runs: read-only commands, and the hook
	// its own program runs.
	for _, args := range [][]string{{"version"}, {"policy", "test"}, {"approvals"}, {"agent", "list"}} {
		if code, out, errOut := runHookCLI(t, home, "", args...); code == exitRefusedUnderAgent || strings.Contains(errOut, "running under an AI agent") {
			t.Errorf("%v: refused: exit %d %s %s", args, code, out, errOut)
		}
	}
	ev := `{"session_id":"s","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t1"}`
	if code, out, errOut := runHookCLI(t, home, ev, "hook", "claude-code"); code != 0 || !strings.Contains(out, `"allow"`) {
		t.Errorf("hook: exit %d %s %s", code, out, errOut)
	}
	// A process that shows the daemon's token may answer (scripts, tests).
	tok, err := EnsureToken(home)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(AnswerTokenEnv, tok)
	if code, _, errOut := runHookCLI(t, home, "", "approve", "apr_x"); code == exitRefusedUnderAgent {
		t.Errorf("approve with the token: refused: %s", errOut)
	}
	t.Setenv(AnswerTokenEnv, strings.Repeat("0", 64))
	if code, _, _ := runHookCLI(t, home, "", "approve", "apr_x"); code != exitRefusedUnderAgent {
		t.Errorf("approve with a wrong token: exit %d, want a refusal", code)
	}
}

// TestApproveRefusesUnderClaudeProcess runs the real binary below a
// process named claude (a symlink to sh, so its command name is "claude"),
// with no agent marker in the environment: the ancestry alone refuses.
func TestApproveRefusesUnderClaudeProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	bin := overseertest.Binary(t)
	dir := t.TempDir()
	claude := filepath.Join(dir, "claude")
	if err := os.Symlink(sh, claude); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		skip := name == AnswerTokenEnv
		for _, m := range agentEnvMarkers {
			skip = skip || name == m.name
		}
		if !skip {
			env = append(env, kv)
		}
	}
	env = append(env, "OVERSEER_HOME="+home, "OVERSEER_BIN="+bin)
	run := func(prog string, args ...string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// Two commands, so that the shell cannot exec overseer in its place.
		script := `"$OVERSEER_BIN" ` + strings.Join(args, " ") + `; code=$?; exit $code`
		cmd := exec.CommandContext(ctx, prog, "-c", script)
		cmd.Env = env
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), errb.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, errb.String()
	}
	code, errOut := run(claude, "approve", "apr_x")
	if code != exitRefusedUnderAgent || !strings.Contains(errOut, "(claude) is an ancestor") {
		t.Fatalf("under claude: exit %d, stderr %q; want a refusal naming the claude process", code, errOut)
	}
	// The same under a shell of another name is not refused for being
	// under an agent (it fails for want of the approval instead), unless
	// the test itself runs under one.
	if _, under := DetectAgent(os.Getenv, ProcFS{}, os.Getpid()); under {
		return
	}
	code, errOut = run(sh, "approve", "apr_x")
	if code == exitRefusedUnderAgent {
		t.Fatalf("under sh: refused: %s", errOut)
	}
}
