package watch

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// cpuTime is the CPU time used so far by this process, its waited-for
// children (the tmux clients) and the tmux server.
func cpuTime(b *testing.B, serverPID int) time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	d := time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
	st, err := os.ReadFile("/proc/" + strconv.Itoa(serverPID) + "/stat")
	if err != nil {
		b.Skip("no /proc: the server's CPU time cannot be read")
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
	ut, _ := strconv.Atoi(f[11])
	stt, _ := strconv.Atoi(f[12])
	return d + time.Duration(ut+stt)*10*time.Millisecond // USER_HZ = 100
}

// BenchmarkIdlePanes: one capture round of 10 idle panes (what the watcher
// does each interval), reporting the CPU share of one core it costs at the
// default interval of 1s — this process, the tmux clients and the server.
// Goal: under 2%.
func BenchmarkIdlePanes(b *testing.B) {
	tm := needTmux(b)
	tm.must(b, "new-session", "-d", "-x", "120", "-y", "40", "--", "sh", "-c", "seq 1 30; exec sleep 3600")
	for range 9 {
		tm.must(b, "new-window", "-d", "--", "sh", "-c", "seq 1 30; exec sleep 3600")
	}
	pid, _ := strconv.Atoi(tm.must(b, "display-message", "-p", "#{pid}"))
	w := &Watcher{Tmux: tm, Set: builtinSet(b), Judge: &scriptedJudge{}}
	ctx := context.Background()
	if err := w.Tick(ctx); err != nil {
		b.Fatal(err)
	}
	if n := len(w.panes); n != 10 {
		b.Fatalf("%d panes", n)
	}
	start := cpuTime(b, pid)
	for b.Loop() {
		if err := w.Tick(ctx); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cpuTime(b, pid) - start
	b.ReportMetric(float64(cpu)/float64(b.N)/float64(time.Second)*100, "%core@1s")
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
