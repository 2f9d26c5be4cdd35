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
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cand := filepath.Join(root, ".cache", "npm", "node_modules", ".bin", name)
	if _, err := os.Stat(cand); err == nil {
		return cand
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := name + " is not installed; run scripts/install-agent-clis.sh to install the agent CLIs these tests drive"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED: " + msg)
	return ""
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

// installsLeanHook checks that `overseer init` wrote the lean hook entry
// (overseer-hook, built next to the test binary) into the settings file:
// the agents' calls below then go through it, as they do for users.
func installsLeanHook(t *testing.T, settings string) {
	t.Helper()
	b, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	lean := overseertest.HookBinary(t)
	if n := strings.Count(string(b), lean+" "); n != 2 {
		t.Fatalf("%s runs %s in %d hook entries, want 2 (pre and post):\n%s", settings, lean, n, b)
	}
}
