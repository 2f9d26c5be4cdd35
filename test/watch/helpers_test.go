package watch_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// Versions of the agent CLIs scripts/install-agent-clis.sh installs; the
// fixtures name them.
var cliVersions = map[string]string{"claude": "claude-code", "codex": "codex", "gemini": "gemini"}

// need finds a program the test drives (an agent CLI from .cache/npm, or
// tmux); without it the test is skipped — or, under CI=true, failed.
func need(t testing.TB, name string) string {
	t.Helper()
	return overseertest.NPMTool(t, name, "scripts/install-agent-clis.sh (agent CLIs) or scripts/install-web-test-tools.sh (tmux)")
}

// cliVersion reads an installed agent CLI's version from its package.json.
func cliVersion(t testing.TB, agent string) string {
	t.Helper()
	pkg := map[string]string{"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "gemini": "@google/gemini-cli"}[agent]
	b, err := os.ReadFile(filepath.Join(overseertest.ModuleRoot(t), ".cache", "npm", "node_modules", pkg, "package.json"))
	if err != nil {
		return "unknown"
	}
	const k = `"version": "`
	if i := strings.Index(string(b), k); i >= 0 {
		rest := string(b)[i+len(k):]
		if j := strings.IndexByte(rest, '"'); j > 0 {
			return rest[:j]
		}
	}
	return "unknown"
}

// tmuxServer is a private tmux server for one test: its own socket, so a
// person's tmux is never touched.
type tmuxServer struct {
	bin, sock string
}

func newTmux(t testing.TB) *tmuxServer {
	t.Helper()
	s := &tmuxServer{bin: need(t, "tmux"), sock: filepath.Join(t.TempDir(), "tmux.sock")}
	t.Cleanup(func() { _ = exec.Command(s.bin, "-S", s.sock, "kill-server").Run() })
	return s
}

func (s *tmuxServer) cmd(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(s.bin, append([]string{"-S", s.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// start runs argv in a new window of session (made if new) in dir, and
// returns the pane's id.
func (s *tmuxServer) start(t testing.TB, session, dir string, argv ...string) string {
	t.Helper()
	if exec.Command(s.bin, "-S", s.sock, "has-session", "-t", "="+session).Run() != nil {
		return s.cmd(t, append([]string{"new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-c", dir,
			"-P", "-F", "#{pane_id}", "--"}, argv...)...)
	}
	return s.cmd(t, append([]string{"new-window", "-d", "-t", "=" + session + ":", "-c", dir, "-P", "-F", "#{pane_id}", "--"}, argv...)...)
}

func (s *tmuxServer) capture(t testing.TB, pane string) string {
	t.Helper()
	out, _ := exec.Command(s.bin, "-S", s.sock, "capture-pane", "-p", "-t", pane).Output()
	return string(out)
}

func (s *tmuxServer) info(t testing.TB, pane, format string) string {
	t.Helper()
	out, _ := exec.Command(s.bin, "-S", s.sock, "display-message", "-p", "-t", pane, format).Output()
	return strings.TrimSpace(string(out))
}

// waitFor waits until the pane shows want, and returns the screen.
func (s *tmuxServer) waitFor(t testing.TB, pane, want string, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		if last = s.capture(t, pane); strings.Contains(last, want) {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pane %s did not show %q within %s; it shows:\n%s", pane, want, d, last)
	return ""
}

// agentPane is an agent CLI running interactively in a tmux pane, with its
// own permission prompts on and no hook, against a scripted model.
type agentPane struct {
	pane string
	srv  *modeltest.Server
}

// startAgent starts agent ("claude", "codex" or "gemini") in proj with a
// fresh user home, the model scripted by script, and its prompt "Run the
// command."
func startAgent(t testing.TB, tm *tmuxServer, session, agent, proj string, script modeltest.Script) *agentPane {
	t.Helper()
	return startAgentWith(t, tm, session, agent, proj, script, agentOpts{})
}

// agentOpts are what some recordings need of an agent beyond the defaults.
type agentOpts struct {
	// mcp is the path of a stdio MCP server's script (run by node), given
	// to the agent as the server "everything".
	mcp string
	// args are added to the agent's command line (e.g. a permission mode).
	args []string
	// plans is Gemini CLI's plans directory, relative to the project
	// (none: its default, outside the project).
	plans string
}

func startAgentWith(t testing.TB, tm *tmuxServer, session, agent, proj string, script modeltest.Script, o agentOpts) *agentPane {
	t.Helper()
	bin := need(t, agent)
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}

	env := []string{"env", "-i", "PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8",
		"TERM=xterm-256color", "COLORTERM=truecolor", "TMPDIR=" + os.TempDir()}
	var srv *modeltest.Server
	var argv []string
	write := func(path, content string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	switch agent {
	case "claude":
		srv = modeltest.Anthropic(t, script)
		// Onboarding done and the project trusted, as for someone who has
		// used Claude Code before; permission prompts stay on.
		write(filepath.Join(home, ".claude.json"), fmt.Sprintf(`{"hasCompletedOnboarding":true,"theme":"dark",`+
			`"customApiKeyResponses":{"approved":["sk-ant-test"]},"projects":{%q:{"hasTrustDialogAccepted":true}}}`, proj))
		env = append(env, "ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=sk-ant-test",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
			"DISABLE_ERROR_REPORTING=1")
		argv = []string{bin}
		if o.mcp != "" {
			// --mcp-config takes several values: an option must follow.
			cfg := filepath.Join(home, "mcp.json")
			write(cfg, fmt.Sprintf(`{"mcpServers":{"everything":{"command":%q,"args":[%q,"stdio"]}}}`, nodeBin(t), o.mcp))
			argv = append(argv, "--mcp-config", cfg)
		}
		argv = append(append(argv, "--model", "claude-sonnet-4-5"), o.args...)
		argv = append(argv, "Run the command.")
	case "codex":
		srv = modeltest.Responses(t, script)
		ch := filepath.Join(home, ".codex")
		write(filepath.Join(ch, "config.toml"), fmt.Sprintf(`model = "m"
model_provider = "fake"
approval_policy = "on-request"
sandbox_mode = "read-only"

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
wire_api = "responses"
env_key = "OVERSEER_TEST_MODEL_KEY"
request_max_retries = 0
stream_max_retries = 0

[projects.%q]
trust_level = "trusted"
`, srv.URL, proj)+mcpTOML(t, o.mcp))
		env = append(env, "CODEX_HOME="+ch, "OVERSEER_TEST_MODEL_KEY=test")
		argv = append(append([]string{bin}, o.args...), "Run the command.")
	case "gemini":
		srv = modeltest.Gemini(t, script)
		write(filepath.Join(home, ".gemini", "settings.json"), `{"security":{"auth":{"selectedType":"gemini-api-key"},`+
			`"folderTrust":{"enabled":false}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},`+
			`"general":{"disableAutoUpdate":true`+plansJSON(o.plans)+`}`+mcpJSON(t, o.mcp)+`}`)
		env = append(env, "GEMINI_API_KEY=test", "GOOGLE_GEMINI_BASE_URL="+srv.URL, "GEMINI_CLI_NO_RELAUNCH=true")
		argv = append(append([]string{bin, "-m", "gemini-2.5-pro"}, o.args...), "-i", "Run the command.")
	default:
		t.Fatalf("unknown agent %q", agent)
	}
	pane := tm.start(t, session, proj, append(env, argv...)...)
	pid, _ := strconv.Atoi(tm.info(t, pane, "#{pane_pid}"))
	// Before the test's directories go: the agent, and what it left running
	// from its home (Codex's app server daemon), so nothing writes there
	// while they are removed.
	t.Cleanup(func() {
		kill := func(pid int) {
			if pr, err := os.FindProcess(pid); err == nil {
				_ = pr.Kill()
			}
		}
		if pid > 0 {
			kill(pid)
		}
		for _, p := range overseertest.Procs() {
			if strings.HasPrefix(p.Cmdline, home+string(filepath.Separator)) {
				kill(p.PID)
			}
		}
		time.Sleep(300 * time.Millisecond)
	})
	return &agentPane{pane: pane, srv: srv}
}

func nodeBin(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIPPED: node is not installed")
	}
	return p
}

// mcpTOML is Codex's configuration of the MCP server script (none: "").
func mcpTOML(t testing.TB, script string) string {
	if script == "" {
		return ""
	}
	// Codex runs a tool its server marks read-only without asking, unless
	// told to ask.
	return fmt.Sprintf("\n[mcp_servers.everything]\ncommand = %q\nargs = [%q, \"stdio\"]\ndefault_tools_approval_mode = \"prompt\"\n", nodeBin(t), script)
}

// plansJSON is Gemini CLI's general settings entry of its plans directory
// (none: "").
func plansJSON(dir string) string {
	if dir == "" {
		return ""
	}
	return fmt.Sprintf(`,"plan":{"directory":%q}`, dir)
}

// mcpJSON is Gemini CLI's settings entry of the MCP server script.
func mcpJSON(t testing.TB, script string) string {
	if script == "" {
		return ""
	}
	return fmt.Sprintf(`,"mcpServers":{"everything":{"command":%q,"args":[%q,"stdio"]}}`, nodeBin(t), script)
}

// shellCall is the scripted model's shell call of each agent for command.
func shellCall(agent, command string) modeltest.ToolCall {
	switch agent {
	case "codex":
		// Codex asks only for commands that leave its sandbox.
		return modeltest.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": command,
			"sandbox_permissions": "require_escalated", "justification": "Run the requested command"}}
	case "gemini":
		return modeltest.ToolCall{Name: "run_shell_command", Input: map[string]any{"command": command, "description": "Run the requested command"}}
	}
	return modeltest.ToolCall{Name: "Bash", Input: map[string]any{"command": command, "description": "Run the requested command"}}
}

// typeKeys types text into pane a key at a time: Codex takes keys that
// come together for a paste, and an Enter after them for a line break.
func (s *tmuxServer) typeKeys(t testing.TB, pane, text string) {
	t.Helper()
	for _, r := range text {
		s.cmd(t, "send-keys", "-t", pane, "-l", string(r))
		time.Sleep(400 * time.Millisecond)
	}
}

// codexPlanTurn switches the Codex in pane to Plan mode (/plan) and sends
// msg, waiting for each step to be drawn.
func codexPlanTurn(t testing.TB, tm *tmuxServer, pane, msg string) {
	t.Helper()
	tm.waitFor(t, pane, "? for shortcuts", 60*time.Second)
	time.Sleep(time.Second)
	tm.typeKeys(t, pane, "/plan")
	tm.waitFor(t, pane, "switch to Plan mode", 20*time.Second)
	time.Sleep(time.Second)
	tm.cmd(t, "send-keys", "-t", pane, "Enter")
	tm.waitFor(t, pane, "Plan mode (shift+tab", 20*time.Second)
	time.Sleep(time.Second)
	tm.typeKeys(t, pane, msg)
	tm.waitFor(t, pane, "› "+msg, 20*time.Second)
	time.Sleep(time.Second)
	tm.cmd(t, "send-keys", "-t", pane, "Enter")
}

// oneCall scripts one call, then a text answer.
func oneCall(c modeltest.ToolCall) modeltest.Script { return modeltest.OneCall(c.Name, c.Input) }

var _ = context.Background
