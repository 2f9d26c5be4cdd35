package mcpbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/frontend/mcpgw/mcpgwtest"
	"github.com/overseer-dev/overseer/internal/overseertest"
)

func TestMain(m *testing.M) {
	mcpgwtest.MaybeServe() // this binary is also the upstream server
	os.Exit(m.Run())
}

// connect starts a client over stdio to cmd.
func connect(b *testing.B, cmd *exec.Cmd) *mcp.ClientSession {
	b.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
		&mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func echo(b *testing.B, cs *mcp.ClientSession, name string, i int) time.Duration {
	start := time.Now()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name,
		Arguments: map[string]any{"message": fmt.Sprintf("m%d", i)}})
	d := time.Since(start)
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %+v", name, err, res)
	}
	return d
}

// processCPU is the CPU time (user and system, all threads) a process has
// used, from /proc (Linux; false elsewhere). The kernel counts it in
// ticks of 1/100 s.
func processCPU(pid int) (time.Duration, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, false
	}
	f := strings.Fields(s[i+2:]) // from the state, the third field
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func pct(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

// BenchmarkOverhead calls the test server's echo tool directly and through
// the gateway, alternately (so both see the same machine load), and
// reports the medians and the median overhead per call. The gateway is
// the real binary with its kernel on a SQLite file: each call is judged
// (auto, from the tool's read-only annotation), its action, verdict and
// result appended to the hash-chained audit log, durably.
func BenchmarkOverhead(b *testing.B) {
	exe, env := mcpgwtest.Command(b)
	upstream := func() *exec.Cmd {
		cmd := exec.Command(exe)
		cmd.Env = os.Environ()
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		return cmd
	}
	home := b.TempDir()
	q := func(s string) string { j, _ := json.Marshal(s); return string(j) }
	cfg := "servers:\n  up:\n    command: " + q(exe) + "\n    env: {" + mcpgwtest.EnvServe + ": \"1\"}\n"
	// Repeat detection would put the thousandth echo to a person; the
	// benchmark measures the path of a call that runs unasked.
	pol := "version: 1\nsettings:\n  loop: {same_args: 100000000, same_tool: 100000000}\n"
	if err := os.WriteFile(filepath.Join(home, "mcp.yaml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "policy.yaml"), []byte(pol), 0o600); err != nil {
		b.Fatal(err)
	}
	gw := exec.Command(overseertest.Binary(b), "--home", home, "mcp")
	gw.Env = append(os.Environ(), "OVERSEER_HOME="+home)

	direct := connect(b, upstream())
	through := connect(b, gw)
	// Warm up both paths (process start, first SQLite writes).
	for i := 0; i < 20; i++ {
		echo(b, direct, "echo", -i)
		echo(b, through, "up__echo", -i)
	}
	dd := make([]time.Duration, 0, b.N)
	gd := make([]time.Duration, 0, b.N)
	cpu0, cpuOK := processCPU(gw.Process.Pid)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			dd = append(dd, echo(b, direct, "echo", i))
			gd = append(gd, echo(b, through, "up__echo", i))
		} else {
			gd = append(gd, echo(b, through, "up__echo", i))
			dd = append(dd, echo(b, direct, "echo", i))
		}
	}
	b.StopTimer()
	cpu1, cpuOK1 := processCPU(gw.Process.Pid)
	over := make([]time.Duration, len(dd))
	for i := range dd {
		over[i] = gd[i] - dd[i]
	}
	md, mg := median(dd), median(gd)
	b.ReportMetric(float64(md.Nanoseconds()), "direct-p50-ns")
	b.ReportMetric(float64(pct(dd, 0.9).Nanoseconds()), "direct-p90-ns")
	b.ReportMetric(float64(mg.Nanoseconds()), "gateway-p50-ns")
	b.ReportMetric(float64(pct(gd, 0.9).Nanoseconds()), "gateway-p90-ns")
	b.ReportMetric(float64(pct(gd, 0.99).Nanoseconds()), "gateway-p99-ns")
	b.ReportMetric(float64((mg - md).Nanoseconds()), "overhead-p50-ns")
	b.ReportMetric(float64((pct(gd, 0.9) - pct(dd, 0.9)).Nanoseconds()), "overhead-p90-ns")
	b.ReportMetric(float64(median(over).Nanoseconds()), "paired-overhead-p50-ns")
	b.ReportMetric(float64(mg)/float64(md), "ratio")
	if cpuOK && cpuOK1 {
		// The gateway's CPU time per call: a figure a busy machine
		// changes less than the wall-clock ones.
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "gateway-cpu-ns/call")
	}
}
