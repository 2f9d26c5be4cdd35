package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// askerPolicy puts deploys to a person.
const askerPolicy = `version: 1
extends: builtin
rules:
  - name: deploys-need-a-person
    kind: shell
    when: 'args.command.startsWith("deploy ")'
    level: approve
    message: deploys need a person
`

func askerHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "policy.yaml"), []byte(askerPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// hookProc is a real `overseer hook claude-code` process holding a call.
type hookProc struct {
	cmd            *exec.Cmd
	stdout, stderr *overseertest.SyncBuffer
	done           chan struct{}
	code           int
}

func startHook(t *testing.T, home, command string, args ...string) *hookProc {
	t.Helper()
	ev := fmt.Sprintf(`{"session_id":"sess-%s","cwd":"/srv/app","hook_event_name":"PreToolUse","tool_name":"Bash",`+
		`"tool_input":{"command":%q},"tool_use_id":"tu-%d"}`, strings.Fields(command)[1], command, time.Now().UnixNano())
	cmd := exec.Command(overseertest.Binary(t), append([]string{"--home", home, "hook", "claude-code"}, args...)...)
	cmd.Env = append(os.Environ(), "OVERSEER_HOME="+home)
	cmd.Stdin = strings.NewReader(ev)
	h := &hookProc{cmd: cmd, stdout: &overseertest.SyncBuffer{}, stderr: &overseertest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = h.stdout, h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			h.code = ee.ExitCode()
		}
		close(h.done)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-h.done })
	return h
}

func (h *hookProc) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the hook did not end:\n%s\n%s", h.stdout.String(), h.stderr.String())
	}
}

// approvalView is what these tests read of an approval.
type approvalView struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Action struct {
		Args map[string]any `json:"args"`
		Cwd  string         `json:"cwd"`
	} `json:"action"`
	Asker *struct {
		Kind string `json:"kind"`
		PID  int    `json:"pid"`
		Hold bool   `json:"hold"`
	} `json:"asker"`
	Answer *struct {
		Decision, Who, Reason string
	} `json:"answer"`
}

// approvalFor waits until the approval of command reaches a status.
func approvalFor(t *testing.T, d *overseertest.Daemon, command, status string, within time.Duration) approvalView {
	t.Helper()
	deadline := time.Now().Add(within)
	var last []approvalView
	for time.Now().Before(deadline) {
		code, body := d.Do(t, "GET", "/api/v1/approvals?status=all", nil, true)
		if code == 200 && json.Unmarshal(body, &last) == nil {
			for _, a := range last {
				if a.Action.Args["command"] == command && a.Status == status {
					return a
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s approval for %q within %s: %+v\n%s", status, command, within, last, d.Log())
	return approvalView{}
}

// TestHookKilledWhileWaiting: a hook killed with SIGKILL while it holds a
// call leaves no request behind: the daemon withdraws it within seconds, as
// withdrawn (not denied), and the queue is empty again.
func TestHookKilledWhileWaiting(t *testing.T) {
	home := askerHome(t)
	d := overseertest.StartDaemon(t, home)
	h := startHook(t, home, "deploy prod")
	apr := approvalFor(t, d, "deploy prod", "pending", 20*time.Second)
	if apr.Asker == nil || apr.Asker.Kind != "hook" || apr.Asker.PID != h.cmd.Process.Pid || !apr.Asker.Hold || apr.Action.Cwd != "/srv/app" {
		t.Fatalf("the request does not name its hook: %+v (hook pid %d)", apr, h.cmd.Process.Pid)
	}
	start := time.Now()
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got := approvalFor(t, d, "deploy prod", "withdrawn", 10*time.Second)
	t.Logf("withdrawn %s after the kill", time.Since(start).Round(time.Millisecond))
	if got.Answer == nil || got.Answer.Decision != "withdraw" || got.Answer.Who != "withdrawn" ||
		!strings.Contains(got.Answer.Reason, "hook") {
		t.Fatalf("answer %+v", got.Answer)
	}
	r := overseertest.Run(t, home, "", "approvals")
	if r.Code != 0 || !strings.Contains(r.Stdout, "No approvals are waiting") {
		t.Fatalf("approvals after the kill: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	// The audit records the withdrawal as an answer of its own kind.
	code, body := d.Do(t, "GET", "/api/v1/audit?type=answer", nil, true)
	if code != 200 || !strings.Contains(string(body), `"status":"withdrawn"`) {
		t.Fatalf("audit: %d %s", code, body)
	}
}

// TestHookGivesUp: a hook whose max_wait runs out, and one the agent
// interrupts (SIGTERM), withdraw their request on the way out and deny the
// call.
func TestHookGivesUp(t *testing.T) {
	home := askerHome(t)
	d := overseertest.StartDaemon(t, home)

	t.Run("max_wait runs out", func(t *testing.T) {
		h := startHook(t, home, "deploy staging", "--max-wait", "2s")
		h.wait(t)
		if h.code != 0 || !strings.Contains(h.stdout.String(), `"permissionDecision":"deny"`) ||
			!strings.Contains(h.stdout.String(), "no person answered") {
			t.Fatalf("exit %d\n%s\n%s", h.code, h.stdout.String(), h.stderr.String())
		}
		got := approvalFor(t, d, "deploy staging", "withdrawn", 5*time.Second)
		if !strings.Contains(got.Answer.Reason, "max_wait 2s") {
			t.Fatalf("answer %+v", got.Answer)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		h := startHook(t, home, "deploy canary")
		approvalFor(t, d, "deploy canary", "pending", 20*time.Second)
		if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		h.wait(t)
		if h.code != 2 || !strings.Contains(h.stderr.String(), "interrupted") {
			t.Fatalf("exit %d\n%s\n%s", h.code, h.stdout.String(), h.stderr.String())
		}
		got := approvalFor(t, d, "deploy canary", "withdrawn", 5*time.Second)
		if !strings.Contains(got.Answer.Reason, "interrupted") {
			t.Fatalf("answer %+v (the hook's own withdrawal should have come first)", got.Answer)
		}
	})

	t.Run("no daemon", func(t *testing.T) {
		home := askerHome(t)
		h := startHook(t, home, "deploy nightly")
		h.wait(t)
		if !strings.Contains(h.stdout.String(), "no Overseer daemon is running") {
			t.Fatalf("exit %d\n%s\n%s", h.code, h.stdout.String(), h.stderr.String())
		}
		d := overseertest.StartDaemon(t, home)
		if got := approvalFor(t, d, "deploy nightly", "withdrawn", 5*time.Second); !strings.Contains(got.Answer.Reason, "no Overseer daemon") {
			t.Fatalf("answer %+v", got.Answer)
		}
		if strings.Contains(d.Log(), "pending:   1") {
			t.Fatalf("the daemon started with the dead request pending:\n%s", d.Log())
		}
	})
}

// TestRestartWithdrawsDeadRequests: the daemon is killed while three
// callers wait; one hook is killed and one API caller's wait runs out while
// it is down. The next daemon starts with only the live request pending —
// and the live hook, which kept looking for the daemon, gets the person's
// answer from it.
func TestRestartWithdrawsDeadRequests(t *testing.T) {
	home := askerHome(t)
	d := overseertest.StartDaemon(t, home)
	live := startHook(t, home, "deploy live")
	dead := startHook(t, home, "deploy dead")
	approvalFor(t, d, "deploy live", "pending", 20*time.Second)
	approvalFor(t, d, "deploy dead", "pending", 20*time.Second)
	// An API caller that says it waits two seconds.
	code, body := d.Do(t, "POST", "/api/v1/actions", map[string]any{"tool": "Bash", "agent": "script", "session": "s9",
		"cwd": "/srv/app", "args": map[string]any{"command": "deploy api"},
		"asker": map[string]any{"kind": "api", "wait": "2s"}}, false)
	if code != 200 || !strings.Contains(string(body), `"pending"`) {
		t.Fatalf("submit: %d %s", code, body)
	}
	// And one that says nothing: it is left to its deadline.
	if code, body := d.Do(t, "POST", "/api/v1/actions", map[string]any{"tool": "Bash", "agent": "script", "session": "s9",
		"cwd": "/srv/app", "args": map[string]any{"command": "deploy unsaid"}}, false); code != 200 {
		t.Fatalf("submit: %d %s", code, body)
	}

	d.Kill()
	_ = dead.cmd.Process.Signal(syscall.SIGKILL)
	dead.wait(t)
	time.Sleep(2500 * time.Millisecond) // the API caller's wait runs out

	d = overseertest.StartDaemon(t, home)
	if !strings.Contains(d.Log(), "2 requests were withdrawn") {
		t.Fatalf("the daemon did not withdraw the dead requests at start:\n%s", d.Log())
	}
	approvalFor(t, d, "deploy dead", "withdrawn", time.Second)
	approvalFor(t, d, "deploy api", "withdrawn", time.Second)
	approvalFor(t, d, "deploy unsaid", "pending", time.Second)
	apr := approvalFor(t, d, "deploy live", "pending", time.Second)

	// The live hook found the new daemon; a person answers, and it hears.
	time.Sleep(2 * time.Second)
	r := overseertest.Run(t, home, "", "approve", apr.ID, "--reason", "go")
	if r.Code != 0 {
		t.Fatalf("approve: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	live.wait(t)
	if live.code != 0 || !strings.Contains(live.stdout.String(), `"permissionDecision":"allow"`) {
		t.Fatalf("the live hook: exit %d\n%s\n%s", live.code, live.stdout.String(), live.stderr.String())
	}
	// Still pending after the grace: the live hook is gone now that it has
	// its answer, and no other request was touched.
	approvalFor(t, d, "deploy unsaid", "pending", time.Second)
}
