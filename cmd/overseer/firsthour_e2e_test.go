package main_test

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
)

// The binary built from the repository with the project's build command
// names its version: the commit it was built from, never "devel".
func TestVersionStamped(t *testing.T) {
	root := overseertest.ModuleRoot(t)
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		// Go reads the commit from a repository's .git directory; a git
		// worktree (.git is a file) or an exported tree has none.
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI runs in a clone, but %s/.git is not a directory: %v", root, err)
		}
		t.Skip("SKIPPED: not built from a git clone (a worktree or an exported tree): no commit to stamp")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("SKIPPED: git is not installed")
	}
	r := overseertest.Run(t, t.TempDir(), "", "version")
	v := strings.TrimSpace(strings.TrimPrefix(r.Stdout, "overseer "))
	if r.Code != 0 || v == "" || v == "dev" || strings.HasPrefix(v, "devel") {
		t.Fatalf("overseer version: %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v, strings.TrimSpace(string(head))) {
		t.Fatalf("version %q does not name the commit %s", v, head)
	}
}

// `overseer eval` judges an action where it runs when the action names no
// working directory.
func TestEvalDefaultsToItsWorkingDirectory(t *testing.T) {
	wd := t.TempDir()
	cmd := exec.Command(overseertest.Binary(t), "--home", t.TempDir(), "eval")
	cmd.Dir = wd
	cmd.Stdin = strings.NewReader(`{"tool":"Bash","args":{"command":"rm -rf build"}}`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("eval: %v %s", err, out)
	}
	var v struct {
		Facts struct {
			Paths []struct {
				Path  string `json:"path"`
				InCwd bool   `json:"in_cwd"`
			} `json:"paths"`
		} `json:"facts"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Facts.Paths) != 1 || v.Facts.Paths[0].Path != filepath.Join(wd, "build") || !v.Facts.Paths[0].InCwd {
		t.Fatalf("facts: %s", out)
	}
}

// A CLI pointed at a home whose daemon runs elsewhere says so, and creates
// no empty database there.
func TestCLIHomeWithoutDaemonSaysSo(t *testing.T) {
	daemonHome := t.TempDir()
	d := overseertest.StartDaemon(t, daemonHome)
	for i := 0; i < 100 && !strings.Contains(d.Log(), "console:"); i++ {
		time.Sleep(50 * time.Millisecond) // the console's address is printed once the daemon listens
	}
	if strings.Contains(d.Log(), "scan to open") || !strings.Contains(d.Log(), "no QR code") {
		t.Errorf("a daemon on loopback prints no QR code:\n%s", d.Log())
	}
	other := filepath.Join(t.TempDir(), "elsewhere")
	for _, args := range [][]string{{"approvals"}, {"audit", "verify"}, {"policy", "history"}, {"rules", "proposals"}} {
		r := overseertest.Run(t, other, "", args...)
		if r.Code == 0 || !namesDaemon(r.Stderr, daemonHome) {
			t.Errorf("%v with another home: %d %q %q", args, r.Code, r.Stdout, r.Stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(other, "overseer.db")); err == nil {
		t.Fatal("an empty database was created")
	}
	r := overseertest.Run(t, other, `{"tool":"Bash","args":{"command":"ls"}}`, "eval")
	if r.Code != 0 || !namesDaemon(r.Stderr, daemonHome) {
		t.Errorf("eval with another home: %d %q", r.Code, r.Stderr)
	}
}

// namesDaemon reports whether msg says which home the running daemon uses
// and names home among them (daemons of other tests running at the same
// time on the machine are listed too, in any order).
func namesDaemon(msg, home string) bool {
	_, list, ok := strings.Cut(msg, "the daemon runs with ")
	if !ok {
		return false
	}
	list, _, _ = strings.Cut(list, ":")
	list, _, _ = strings.Cut(list, ";")
	for _, h := range strings.Split(list, ", ") {
		if strings.TrimSpace(h) == home {
			return true
		}
	}
	return false
}

// `overseer audit tail` prints one readable line per record; --json prints
// the records.
func TestAuditTailReadable(t *testing.T) {
	home := t.TempDir()
	d := overseertest.StartDaemon(t, home)
	act := map[string]any{"tool": "Bash", "agent": "e2e", "session": "s1", "cwd": "/tmp/proj",
		"args": map[string]any{"command": "git push origin main"}}
	if code, body := d.Do(t, "POST", "/api/v1/actions", act, false); code != 200 {
		t.Fatalf("submit: %d %s", code, body)
	}
	tail := func(args ...string) []string {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, overseertest.Binary(t), append([]string{"--home", home, "audit", "tail"}, args...)...)
		var out bytes.Buffer
		cmd.Stdout = &out
		_ = cmd.Run() // it follows until killed
		var lines []string
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		return lines
	}
	lines := tail()
	if len(lines) < 3 {
		t.Fatalf("tail: %q", lines)
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{"action", "Bash git push origin main", "(in /tmp/proj)", "verdict", "approve (", "asks a person", "e2e/s1"} {
		if !strings.Contains(text, want) {
			t.Errorf("tail lacks %q:\n%s", want, text)
		}
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "#") || strings.HasPrefix(l, "{") {
			t.Errorf("not a readable line: %q", l)
		}
	}
	for _, l := range tail("--json") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec["hash"] == nil {
			t.Errorf("--json line: %q %v", l, err)
		}
	}
}
