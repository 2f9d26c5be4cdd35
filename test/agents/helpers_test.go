package agents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// testPolicy gives the commands of these tests known levels; everything
// else follows the built-in policy (a shell command is confirm).
const testPolicy = `version: 1
rules:
  - name: e2e-echo-auto
    kind: shell
    when: 'args.command.startsWith("echo ")'
    level: auto
    message: echo is harmless
  - name: e2e-protect-victims
    kind: shell
    when: 'args.command.contains("rm -rf") && args.command.contains("victim")'
    level: block
    message: the victim directory is protected
  - name: e2e-touch-confirm
    kind: shell
    when: 'args.command.startsWith("touch ")'
    level: confirm
    message: creating files needs a yes here
`

// findCLI returns the path of an agent CLI: from .cache/npm (where
// scripts/install-agent-clis.sh puts it) or PATH. Without it the test is
// skipped — or, in CI, failed.
func findCLI(t *testing.T, name string) string {
	t.Helper()
	return overseertest.NPMTool(t, name, "scripts/install-agent-clis.sh to install the agent CLIs these tests drive")
}

// env is one end-to-end setup: an Overseer home with the test policy and a
// running daemon, a project directory, and a home directory for the agent.
type env struct {
	home, proj, userHome string
	daemon               *overseertest.Daemon
}

func newEnv(t *testing.T, withDaemon bool) *env {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{home: filepath.Join(root, "overseer"), proj: filepath.Join(root, "proj"), userHome: filepath.Join(root, "user")}
	for _, d := range []string{e.home, e.proj, e.userHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.home, "policy.yaml"), []byte(testPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	if withDaemon {
		e.daemon = overseertest.StartDaemon(t, e.home)
	}
	return e
}

// overseer runs the overseer binary against the env's home.
func (e *env) overseer(t *testing.T, args ...string) overseertest.Result {
	t.Helper()
	return overseertest.Run(t, e.home, "", args...)
}

// must runs the overseer binary against the env's home and fails the test
// unless it succeeds; it returns what it printed.
func (e *env) must(t *testing.T, args ...string) string {
	t.Helper()
	r := e.overseer(t, args...)
	if r.Code != 0 {
		t.Fatalf("overseer %v: %d %s %s", args, r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// initClaude installs Overseer's Claude Code hooks in the project; a call
// waits up to 60s for a person.
func (e *env) initClaude(t *testing.T) {
	t.Helper()
	e.must(t, "init", "claude-code", "--project", e.proj, "--max-wait", "60s")
}

// initGemini installs Overseer's Gemini CLI hooks in the project; a call
// waits up to 60s for a person.
func (e *env) initGemini(t *testing.T) {
	t.Helper()
	e.must(t, "init", "gemini", "--project", e.proj, "--max-wait", "60s")
}

// codexHome creates the agent's Codex home (its CODEX_HOME) and returns it.
func (e *env) codexHome(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(e.userHome, ".codex")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// initCodex installs Overseer's Codex hooks in the agent's Codex home
// (CODEX_HOME is set for the test, for `overseer init codex`); a call
// waits up to 60s for a person. It returns the Codex home.
func (e *env) initCodex(t *testing.T) string {
	t.Helper()
	dir := e.codexHome(t)
	t.Setenv("CODEX_HOME", dir)
	e.must(t, "init", "codex", "--max-wait", "60s")
	return dir
}

// newClaudeEnv is the real Claude Code CLI and an env with a running
// daemon whose hooks are installed in the project (initClaude).
func newClaudeEnv(t *testing.T) (string, *env) {
	t.Helper()
	bin := findCLI(t, "claude")
	e := newEnv(t, true)
	e.initClaude(t)
	return bin, e
}

// newCodexEnv is the real Codex CLI and an env with a running daemon whose
// hooks are installed in the agent's Codex home (initCodex), returned too.
func newCodexEnv(t *testing.T) (bin string, e *env, codexHome string) {
	t.Helper()
	bin = findCLI(t, "codex")
	e = newEnv(t, true)
	return bin, e, e.initCodex(t)
}

// newGeminiEnv is the real Gemini CLI and an env with a running daemon
// whose hooks are installed in the project (initGemini).
func newGeminiEnv(t *testing.T) (string, *env) {
	t.Helper()
	bin := findCLI(t, "gemini")
	e := newEnv(t, true)
	e.initGemini(t)
	return bin, e
}

// victim creates a directory holding a precious file in the project, for
// an agent to try to remove; it returns both.
func (e *env) victim(t *testing.T) (dir, keep string) {
	t.Helper()
	dir = filepath.Join(e.proj, "victim")
	keep = filepath.Join(dir, "keep.txt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, keep
}

// survived fails the test unless the victim's precious file is as it was;
// out is the agent's output, for the failure message.
func survived(t *testing.T, keep, out string) {
	t.Helper()
	if b, err := os.ReadFile(keep); err != nil || string(b) != "precious" {
		t.Fatalf("the victim did not survive: %v\n%s", err, out)
	}
}

// whileApproving runs run (an agent's session; it returns the agent's
// output) while a person approves the first pending approval through
// `overseer approve`, and fails the test unless one was approved.
func (e *env) whileApproving(t *testing.T, run func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	approved := e.approveWhenPending(t, ctx)
	out := run()
	if id := <-approved; id == "" {
		t.Fatalf("no approval was asked for\n%s", out)
	}
}

// changedAfterRead is modeltest.Steps(calls...), with path rewritten to
// content by someone else once the first call's result is back: the
// agent's read of it (the first call) is stale from then on.
func changedAfterRead(t *testing.T, path, content string, calls ...modeltest.ToolCall) modeltest.Script {
	steps := modeltest.Steps(calls...)
	return func(r *modeltest.Request) modeltest.Reply {
		if r.HasTools && len(r.Results) == 1 {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Error(err)
			}
		}
		return steps(r)
	}
}

// approveWhenPending approves the first pending approval through
// `overseer approve`, as a person at a terminal would. It returns a
// channel that receives the approval's id.
func (e *env) approveWhenPending(t *testing.T, ctx context.Context) <-chan string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		defer close(got)
		for ctx.Err() == nil {
			res := overseertest.Run(t, e.home, "", "approvals", "--json")
			var list []struct {
				ID string `json:"id"`
			}
			if res.Code == 0 && json.Unmarshal([]byte(res.Stdout), &list) == nil && len(list) > 0 {
				if r := overseertest.Run(t, e.home, "", "approve", list[0].ID, "--reason", "looks fine"); r.Code != 0 {
					t.Errorf("overseer approve: %d %s %s", r.Code, r.Stdout, r.Stderr)
				}
				got <- list[0].ID
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return got
}

// auditRecord is one line of `overseer audit export`.
type auditRecord struct {
	store.AuditRecord
}

// audit exports the audit log.
func (e *env) audit(t *testing.T) []auditRecord {
	t.Helper()
	res := e.overseer(t, "audit", "export")
	if res.Code != 0 {
		t.Fatalf("audit export: %d %s", res.Code, res.Stderr)
	}
	var out []auditRecord
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r auditRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit line %s: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// runCLI runs an agent CLI in dir with env and a deadline; it returns the
// combined output and the exit status.
func runCLI(t *testing.T, dir string, environ []string, timeout time.Duration, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = environ
	cmd.Stdin = strings.NewReader("")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v\n%s", name, err, out.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %s:\n%s", name, timeout, out.String())
	}
	return out.String(), code
}

// baseEnv is the environment the agent CLIs run with: PATH and a private
// HOME, nothing of the machine's own agent configuration.
func baseEnv(userHome string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + userHome, "LANG=C.UTF-8", "TERM=dumb",
		"TMPDIR=" + os.TempDir()}
}
