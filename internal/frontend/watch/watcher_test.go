package watch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// needTmux starts a private tmux server for a test (never a person's).
func needTmux(t testing.TB) *Tmux {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed; run scripts/install-web-test-tools.sh")
		}
		t.Skip("SKIPPED: tmux is not installed")
	}
	tm := &Tmux{Bin: bin, Server: []string{"-S", filepath.Join(t.TempDir(), "tmux.sock"), "-f", "/dev/null"}}
	t.Cleanup(func() { _, _ = tm.run(context.Background(), "kill-server") })
	return tm
}

func (t *Tmux) must(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := t.run(context.Background(), args...)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// scriptedJudge rules every action the same way and keeps what it saw.
type scriptedJudge struct {
	mu      sync.Mutex
	ruling  Ruling
	actions []*action.Action
	records []kernel.Result
}

func (j *scriptedJudge) Judge(_ context.Context, a *action.Action) (Ruling, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.actions = append(j.actions, a)
	return j.ruling, nil
}

func (j *scriptedJudge) Record(_ context.Context, r kernel.Result) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.records = append(j.records, r)
	return nil
}

// ticks runs n captures of w, letting judgements finish in between.
func ticks(t *testing.T, w *Watcher, n int) {
	t.Helper()
	for range n {
		if err := w.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// TestWatcherLinePrompt: a generic (y/n) prompt is never read whole, so
// an auto verdict does not answer it (a person must); a person's yes is
// typed once, on the prompt's line, and audited with the keys.
func TestWatcherLinePrompt(t *testing.T) {
	set := builtinSet(t)
	for _, tc := range []struct {
		name   string
		ruling Ruling
		typed  bool
	}{
		{"auto on an unread prompt is not typed", Ruling{Answer: Yes, Level: action.Auto, ActionID: "act_1"}, false},
		{"a person's yes is typed", Ruling{Answer: Yes, Level: action.Confirm, ActionID: "act_2"}, true},
		{"leave types nothing", Ruling{Answer: Leave, Level: action.Confirm, ActionID: "act_3"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := needTmux(t)
			pane := tm.must(t, "new-session", "-d", "-x", "80", "-y", "10", "-P", "-F", "#{pane_id}", "--",
				"sh", "-c", `printf 'Continue? (y/n) '; read a; echo "got:$a"; exec sleep 600`)
			j := &scriptedJudge{ruling: tc.ruling}
			w := &Watcher{Tmux: tm, Set: set, Judge: j, Interval: 100 * time.Millisecond}
			ticks(t, w, 6)
			screen := tm.must(t, "capture-pane", "-p", "-t", pane)
			if got := strings.Contains(screen, "got:y"); got != tc.typed {
				t.Fatalf("typed = %v, want %v; screen:\n%s", got, tc.typed, screen)
			}
			j.mu.Lock()
			defer j.mu.Unlock()
			if len(j.actions) != 1 || !j.actions[0].HumanRequested || j.actions[0].Kind != action.KindOther {
				t.Fatalf("judged %+v", j.actions)
			}
			if len(j.records) != 1 {
				t.Fatalf("records %+v", j.records)
			}
			if out := j.records[0].Output; !strings.Contains(out, "Continue? (y/n)") || (tc.typed && !strings.Contains(out, `keys: ["y" "Enter"]`)) {
				t.Fatalf("record %s", out)
			}
		})
	}
}

// TestWatcherLeavesShells: an agent's prompt drawn by a process that is not
// the agent (cat of a recorded screen in a shell) is not recognised.
func TestWatcherLeavesShells(t *testing.T) {
	tm := needTmux(t)
	fx := fixtures(t)["claude-code-2.1.328/bash-touch.txt"]
	file := filepath.Join(t.TempDir(), "screen.txt")
	if err := os.WriteFile(file, []byte(fx.Screen), 0o644); err != nil {
		t.Fatal(err)
	}
	tm.must(t, "new-session", "-d", "-x", "120", "-y", "40", "--", "sh", "-c", "cat "+file+"; exec cat")
	j := &scriptedJudge{ruling: Ruling{Answer: Yes, Level: action.Auto, ActionID: "act_1"}}
	w := &Watcher{Tmux: tm, Set: builtinSet(t), Judge: j}
	ticks(t, w, 4)
	if len(j.actions) != 0 {
		t.Fatalf("judged %+v", j.actions)
	}
}

// TestWatcherMovesSelectionForAPersonsYes: Claude Code's plan prompt opens
// on "Yes, auto-accept edits", which the watcher never chooses. A person's
// yes moves the selection to "Yes, manually approve edits" (the option that
// allows once), checks it there on a fresh capture, and chooses it; a menu
// that does not move gets no Enter, only an alert.
func TestWatcherMovesSelectionForAPersonsYes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("SKIPPED: no bash to draw the menu")
	}
	fx := fixtures(t)["claude-code-2.1.328/plan.txt"]
	first := strings.TrimRight(fx.Screen, "\n")
	moved := strings.Replace(strings.Replace(first, "❯ 1. Yes, auto-accept", "  1. Yes, auto-accept", 1),
		"  2. Yes, manually approve", "❯ 2. Yes, manually approve", 1)
	if moved == first {
		t.Fatal("the fixture's menu is not as expected")
	}
	for _, tc := range []struct {
		name  string
		moves bool // the menu draws the moved selection on Down
		want  string
	}{
		{"the selection moves", true, "chosen:2"},
		{"the selection does not move", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := needTmux(t)
			dir := t.TempDir()
			for name, body := range map[string]string{"first.txt": first, "moved.txt": moved} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// A copy of bash named like the agent: tmux reports it as the
			// pane's command.
			b, err := os.ReadFile(bash)
			if err != nil {
				t.Skip("SKIPPED: bash cannot be copied")
			}
			bin := filepath.Join(dir, "claude")
			if err := os.WriteFile(bin, b, 0o755); err != nil {
				t.Fatal(err)
			}
			onDown := `show moved.txt; IFS= read -rsn1 k; [ -z "$k" ] && echo chosen:2 > got`
			if !tc.moves {
				onDown = `IFS= read -rsn1 k; [ -z "$k" ] && echo chosen:1 > got`
			}
			script := `cd ` + dir + `; show() { printf '\033[2J\033[H'; cat "$1"; }; show first.txt; IFS= read -rsn1 k
if [ "$k" = $'\e' ]; then IFS= read -rsn2 k; if [ "$k" = "[B" ]; then ` + onDown + `; fi
elif [ -z "$k" ]; then echo chosen:1 > got; fi
exec sleep 600`
			tm.must(t, "new-session", "-d", "-x", "120", "-y", "40", "--", bin, "-c", script)
			j := &scriptedJudge{ruling: Ruling{Answer: Yes, Level: action.Approve, ActionID: "act_1", Reason: "approved by ann"}}
			w := &Watcher{Tmux: tm, Set: builtinSet(t), Judge: j, Interval: 100 * time.Millisecond}
			ticks(t, w, 10)
			got, _ := os.ReadFile(filepath.Join(dir, "got"))
			if strings.TrimSpace(string(got)) != tc.want {
				t.Fatalf("chosen %q, want %q; screen:\n%s", got, tc.want, tm.must(t, "capture-pane", "-p"))
			}
			j.mu.Lock()
			defer j.mu.Unlock()
			if len(j.actions) != 1 || j.actions[0].Tool != "ExitPlanMode" || !j.actions[0].HumanRequested {
				t.Fatalf("judged %+v", j.actions)
			}
			if len(j.records) != 1 {
				t.Fatalf("records %+v", j.records)
			}
			out := j.records[0].Output
			if tc.moves && !strings.Contains(out, `keys: ["Down" "Enter"]`) || !tc.moves && !strings.Contains(out, "did not move") {
				t.Fatalf("record:\n%s", out)
			}
		})
	}
}
