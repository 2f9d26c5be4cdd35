package webe2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// installScript installs what these tests need.
const installScript = "scripts/install-web-test-tools.sh"

// testPolicy makes deploys always wait for a person.
const testPolicy = `version: 1
extends: builtin
rules:
  - name: test-deploy
    tool: [deploy]
    level: approve
    message: Deploys need a person.
`

// need fails (CI) or skips (elsewhere) when a tool is missing.
func need(t *testing.T, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	msg := fmt.Sprintf("%s is not installed: run %s", what, installScript)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED (not a pass): " + msg)
}

func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

func playwrightDir(t testing.TB) string {
	if p := os.Getenv("PLAYWRIGHT_DIR"); p != "" {
		return p
	}
	return filepath.Join(overseertest.ModuleRoot(t), ".cache", "npm-playwright")
}

func needBrowser(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("node")
	need(t, "node", err == nil)
	_, err = os.Stat(chromiumPath())
	need(t, "chromium", err == nil)
	_, err = os.Stat(filepath.Join(playwrightDir(t), "node_modules", "playwright-core", "package.json"))
	need(t, "playwright-core", err == nil)
}

// newHome makes a home with the test policy (and optional extra files).
func newHome(t *testing.T, files map[string]string) string {
	t.Helper()
	home := t.TempDir()
	files["policy.yaml"] = testPolicy
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(home, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// outcome is what a waiting agent learns.
type outcome struct {
	ActionID string `json:"action_id"`
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	Approval *struct {
		ID string `json:"id"`
	} `json:"approval"`
	err error
}

// cwdOf is the working directory callAndWait gives the call for target.
func cwdOf(target string) string { return "/srv/deploy/" + target }

// callAndWait submits an action the way an agent does and holds the call
// while a person decides; the outcome arrives on the channel.
func callAndWait(d *overseertest.Daemon, target string) <-chan outcome {
	out := make(chan outcome, 1)
	go func() { // ends when the daemon answers (at most its 2-minute wait)
		body, _ := json.Marshal(map[string]any{"tool": "deploy", "agent": "e2e-agent", "session": "s-e2e",
			"cwd": cwdOf(target), "args": map[string]any{"target": target}})
		resp, err := http.Post(d.URL("/api/v1/actions?wait=100s"), "application/json", bytes.NewReader(body))
		if err != nil {
			out <- outcome{err: err}
			return
		}
		defer resp.Body.Close()
		var o outcome
		o.err = json.NewDecoder(resp.Body).Decode(&o)
		out <- o
	}()
	return out
}

// startTUI runs `overseer tui` on home, as tess, in a private tmux server
// (cols wide), in the session "tui". It returns tmux, which runs a tmux
// command on that server, and screen, which waits until the TUI shows
// want and returns the screen.
func startTUI(t *testing.T, home string, cols int) (tmux func(args ...string) string, screen func(want string) string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux = func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-s", "tui", "-x", strconv.Itoa(cols), "-y", "45",
		fmt.Sprintf("%s --home %s tui --who tess --poll 200ms", overseertest.Binary(t), home))
	t.Cleanup(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
	screen = func(want string) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		var s string
		for time.Now().Before(deadline) {
			s = tmux("capture-pane", "-p", "-t", "tui")
			if strings.Contains(s, want) {
				return s
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("the screen never showed %q:\n%s", want, s)
		return ""
	}
	return tmux, screen
}

// released waits for the agent's call to return.
func released(t *testing.T, ch <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatalf("the waiting call failed: %v", o.err)
		}
		return o
	case <-time.After(60 * time.Second):
		t.Fatal("the waiting call was not released")
	}
	return outcome{}
}

// pendingID waits until exactly one approval is pending and returns it.
func pendingID(t *testing.T, d *overseertest.Daemon, target string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		st, body := d.Do(t, "GET", "/api/v1/approvals", nil, true)
		if st == 200 {
			var list []struct {
				ID     string `json:"id"`
				Action struct {
					Args map[string]any `json:"args"`
				} `json:"action"`
			}
			if json.Unmarshal(body, &list) == nil {
				for _, a := range list {
					if a.Action.Args["target"] == target {
						return a.ID
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no pending approval for %s", target)
	return ""
}

// driver is the Playwright script (console.mjs) in a child process.
type driver struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	log   *bytes.Buffer
	mu    sync.Mutex
}

func startDriver(t *testing.T, d *overseertest.Daemon) *driver {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(overseertest.ModuleRoot(t), "test", "web", "console.mjs"))
	cmd.Env = append(os.Environ(), "OVERSEER_URL=http://"+d.Addr, "OVERSEER_TOKEN="+d.Token,
		"CHROMIUM="+chromiumPath(), "PLAYWRIGHT_DIR="+playwrightDir(t))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	dr := &driver{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 100), log: &bytes.Buffer{}}
	cmd.Stderr = &lockedWriter{mu: &dr.mu, w: dr.log}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // reads the driver's output until it exits
		defer close(done)
		defer close(dr.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			dr.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		fmt.Fprintln(stdin, "QUIT")
		stdin.Close()
		timer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
		<-done
		_ = cmd.Wait()
		timer.Stop()
	})
	dr.expect("READY")
	return dr
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (dr *driver) send(line string) {
	dr.t.Helper()
	if _, err := fmt.Fprintln(dr.stdin, line); err != nil {
		dr.t.Fatal(err)
	}
}

// expect returns the rest of the next line starting with prefix; an ERROR
// line or the driver's exit fails the test.
func (dr *driver) expect(prefix string) string {
	dr.t.Helper()
	timeout := time.After(90 * time.Second)
	for {
		select {
		case l, ok := <-dr.lines:
			if !ok {
				dr.mu.Lock()
				defer dr.mu.Unlock()
				dr.t.Fatalf("the browser driver exited before %s:\n%s", prefix, dr.log.String())
			}
			if strings.HasPrefix(l, "ERROR") {
				dr.t.Fatalf("browser driver: %s", l)
			}
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				return strings.TrimSpace(rest)
			}
		case <-timeout:
			dr.t.Fatalf("no %s from the browser driver", prefix)
		}
	}
}
