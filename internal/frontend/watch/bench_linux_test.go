//go:build linux

package watch

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
