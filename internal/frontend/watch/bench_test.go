package watch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// BenchmarkRecognise: every recogniser over a recorded screen.
func BenchmarkRecognise(b *testing.B) {
	set := builtinSet(b)
	fx := fixtures(b)
	screens := []*Screen{fx["claude-code-2.1.328/bash-touch.txt"].ScreenOf(), fx["claude-code-2.1.328/idle.txt"].ScreenOf()}
	for b.Loop() {
		for _, s := range screens {
			set.Recognise(s, "claude")
		}
	}
}

// BenchmarkPromptToKeys: from a prompt drawn in a pane to the answer's keys
// arriving, for an auto verdict, at the default interval (1s). The pane
// runs a script named like the agent that draws a recorded Claude Code
// prompt when asked and reads the answer. Goal: under 1.5 s.
func BenchmarkPromptToKeys(b *testing.B) {
	tm := needTmux(b)
	dir := b.TempDir()
	fx := fixtures(b)["claude-code-2.1.328/bash-touch.txt"]
	screen := strings.TrimRight(fx.Screen, "\n")
	if err := os.WriteFile(filepath.Join(dir, "screen.txt"), []byte(screen), 0o644); err != nil {
		b.Fatal(err)
	}
	// A copy of the shell named like the agent: tmux reports it as the
	// pane's command.
	sh, err := os.ReadFile("/bin/sh")
	if err != nil {
		b.Skip("no /bin/sh to copy")
	}
	bin := filepath.Join(dir, "claude")
	if err := os.WriteFile(bin, sh, 0o755); err != nil {
		b.Fatal(err)
	}
	loop := "cd " + dir + "; while :; do if [ -e trig ]; then rm trig; printf '\\033[2J\\033[H'; cat screen.txt; read a; echo x > got; printf '\\033[2J\\033[H'; fi; sleep 0.01; done"
	tm.must(b, "new-session", "-d", "-x", "120", "-y", "40", "--", bin, "-c", loop)
	w := &Watcher{Tmux: tm, Set: builtinSet(b), MinGap: time.Millisecond,
		Judge: &scriptedJudge{ruling: Ruling{Answer: Yes, Level: action.Auto, ActionID: "act_bench"}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Run(ctx) }()
	var total time.Duration
	for b.Loop() {
		_ = os.Remove(filepath.Join(dir, "got"))
		start := time.Now()
		if err := os.WriteFile(filepath.Join(dir, "trig"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "got")); err == nil {
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("the prompt was not answered; %s:\n%s", tm.must(b, "display-message", "-p", "#{pane_current_command}"), tm.must(b, "capture-pane", "-p"))
			}
			time.Sleep(5 * time.Millisecond)
		}
		total += time.Since(start)
		time.Sleep(1200 * time.Millisecond) // the watcher sees the prompt go (the same prompt again would count as unanswered)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/prompt")
}
