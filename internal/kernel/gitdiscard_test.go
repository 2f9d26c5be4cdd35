package kernel_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// TestGitRemovesUntrackedHookConfig: `overseer init` writes the project's
// .claude/settings.json, untracked until a person commits it. git stash
// --include-untracked took it out of the work tree at notify, so the next
// session ran without Overseer's hooks, and git clean -fd was only confirm
// (a person asked about "untracked files", not about the hooks). Both are
// deletions of the hook configuration now, blocked; once the file is
// tracked (git keeps it, or restores it) they keep their levels.
func TestGitRemovesUntrackedHookConfig(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	proj := filepath.Join(home, "proj")
	writeTree(t, proj, map[string]string{
		"src/main.go":           "package main\n",
		".claude/settings.json": `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"overseer hook claude-code"}]}]}}` + "\n",
	})
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
		cmd.Dir = proj
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "-q")
	git("add", "src")
	git("commit", "-qm", "start")

	k, err := kernel.Open(context.Background(), kernel.Config{Home: filepath.Join(home, ".overseer")})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	judge := func(cmd string) action.Level {
		return k.Evaluate(context.Background(), &action.Action{Tool: "Bash", Kind: action.KindShell, Agent: "claude-code",
			Session: "s", Cwd: proj, Args: map[string]any{"command": cmd}}).Level
	}
	untracked := map[string]action.Level{
		"git stash -u":                       action.Block,
		"git stash push --include-untracked": action.Block,
		"git stash --all":                    action.Block,
		"git clean -fd":                      action.Block,
		"git clean -fdx":                     action.Block,
		"git -C src/.. clean -f":             action.Block,
		// Twins: what leaves untracked files alone.
		"git stash":         action.Notify,
		"git stash list":    action.Auto,
		"git clean -n":      action.Auto,
		"git clean -fd src": action.Confirm,
	}
	for cmd, want := range untracked {
		if got := judge(cmd); got != want {
			t.Errorf("hook configuration untracked: %s: %s, want %s", cmd, got, want)
		}
	}

	git("add", ".claude")
	git("commit", "-qm", "hooks")
	for cmd, want := range map[string]action.Level{
		"git stash -u":  action.Notify,
		"git clean -fd": action.Confirm,
	} {
		if got := judge(cmd); got != want {
			t.Errorf("hook configuration tracked: %s: %s, want %s", cmd, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(proj, ".claude", "settings.json")); err != nil {
		t.Fatal(err)
	}
}
