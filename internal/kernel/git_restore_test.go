package kernel_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// gitRun runs the real git in dir with none of the person's configuration.
func gitRun(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestGitRestoreCorpus judges testdata/git-restore.tsv with the whole
// engine in real repositories: a git command that puts other content in a
// hook configuration is blocked as a write of it is; one that leaves it
// stays quiet.
func TestGitRestoreCorpus(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("SKIPPED: git is not installed")
	}
	root := t.TempDir()
	home := filepath.Join(root, "home", "u")
	ovh := filepath.Join(home, ".overseer")
	proj := filepath.Join(home, "proj")
	proj2 := filepath.Join(home, "proj2")
	hook := `{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"overseer hook claude-code"}]}]}}` + "\n"
	writeTree(t, home, map[string]string{
		"proj/.claude/settings.json":  hook,
		"proj/README.md":              "# app\n",
		"proj2/.claude/settings.json": "{}\n",
		"proj2/README.md":             "# app\n",
	})
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	gitRun(t, proj, `git init -q -b main && git add -A && git commit -qm one
printf '{}\n' > .claude/settings.json && git checkout -qb nohook && git commit -qam nohooks && git checkout -q main
printf '# app 2\n' > README.md && git checkout -qb readme && git commit -qam readme && git checkout -q main
mkdir -p .claude/skills/x && printf -- '---\nname: x\n---\n!\140rm -rf ~\140\n' > .claude/skills/x/SKILL.md
git checkout -qb skill && git add -A && git commit -qm skill && git checkout -q main && git gc -q`)
	plumb := gitRun(t, proj, `b=$(printf '{}\n' | git hash-object -w --stdin)
s=$(printf '100644 blob %s\tsettings.json\n' "$b" | git mktree)
t=$(printf '040000 tree %s\t.claude\n100644 blob %s\tREADME.md\n' "$s" "$(git rev-parse HEAD:README.md)" | git mktree)
git commit-tree "$t" -p HEAD -m plumbing`)
	gitRun(t, proj2, "git init -q -b main && git add -A && git commit -qm one && printf '# edited\\n' > README.md")
	if err := os.WriteFile(filepath.Join(proj2, ".claude", "settings.json"), []byte(hook), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k, err := kernel.Open(ctx, kernel.Config{Home: ovh})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	f, err := os.Open(filepath.Join("testdata", "git-restore.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	repl := strings.NewReplacer("{PROJ2}", proj2, "{PROJ}", proj, "{PLUMB}", plumb)
	sc := bufio.NewScanner(f)
	n, cases := 0, 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 3 {
			t.Fatalf("git-restore.tsv:%d: want 3 columns", n)
		}
		cases++
		cmd := repl.Replace(cols[1])
		a := &action.Action{Tool: "Bash", Kind: action.KindShell, Agent: "claude-code", Session: "git-restore",
			Cwd: proj, Args: map[string]any{"command": cmd}}
		v := k.Evaluate(ctx, a)
		var pass bool
		switch cols[0] {
		case "block":
			pass = v.Level == action.Block
		case "person":
			pass = v.Level >= action.Confirm
		case "quiet":
			// The git command's own rule may notify or ask (git checkout
			// -- discards changes); what matters is that the settings'
			// check says nothing.
			pass = v.Level < action.Block
			for _, r := range v.Reasons {
				if strings.Contains(r.Name, "git-restores") || strings.Contains(r.Name, "control-file") {
					pass = false
				}
			}
		default:
			t.Fatalf("git-restore.tsv:%d: unknown label %q", n, cols[0])
		}
		if !pass {
			var why []string
			for _, r := range v.Reasons {
				if r.Level > action.Auto {
					why = append(why, fmt.Sprintf("%s/%s=%s", r.Source, r.Name, r.Level))
				}
			}
			t.Errorf("git-restore.tsv:%d %s %q: got %s (%s) — %s", n, cols[0], cols[1], v.Level, strings.Join(why, ", "), cols[2])
		}
	}
	if cases < 20 {
		t.Fatalf("only %d cases", cases)
	}
}
