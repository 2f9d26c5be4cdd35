package hook

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

const benchPolicy = `version: 1
rules:
  - name: bench-echo-auto
    kind: shell
    when: 'args.command.startsWith("echo ")'
    level: auto
    message: echo is harmless
`

// event is a Claude Code PreToolUse event for call i of the named
// benchmark. Each call has its own session, so repeat detection never
// raises the benchmark's calls.
func event(name string, i int) string {
	return fmt.Sprintf(`{"session_id":"bench-%s-%d","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","permission_mode":"default",`+
		`"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo bench %d","description":"bench"},`+
		`"tool_use_id":"toolu_bench_%d"}`, strings.ReplaceAll(name, "/", "-"), i, i, i)
}

// median reports the median of ds in milliseconds as the metric "ms/median"
// and that of cpu (the processes' user and system time) as "ms-cpu/median":
// on a busy machine, the CPU a process takes is steadier than its wall time.
func median(b *testing.B, ds, cpu []time.Duration) {
	if len(ds) == 0 {
		return
	}
	for _, m := range []struct {
		d    []time.Duration
		unit string
	}{{ds, "ms/median"}, {cpu, "ms-cpu/median"}} {
		if len(m.d) == 0 {
			continue
		}
		sort.Slice(m.d, func(i, j int) bool { return m.d[i] < m.d[j] })
		b.ReportMetric(float64(m.d[len(m.d)/2])/float64(time.Millisecond), m.unit)
	}
}

// cpuOf is the user and system time a finished command took.
func cpuOf(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// bareHook is the least a hook can be: a Go program that reads the event,
// decodes it and prints a decision. The hook process is compared with it.
const bareHook = `package main

import (
	"encoding/json"
	"os"
)

func main() {
	var ev map[string]any
	if err := json.NewDecoder(os.Stdin).Decode(&ev); err != nil {
		os.Exit(2)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "bare"}})
}
`

// buildBare builds bareHook with the Go toolchain in use, as the project's
// release build does (CGO off, stripped).
func buildBare(b *testing.B) string {
	dir := b.TempDir()
	for name, body := range map[string]string{"main.go": bareHook, "go.mod": "module barehook\n\ngo 1.22\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "barehook")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the bare hook: %v\n%s", err, out)
	}
	return bin
}

// runAllow times b.N runs of the program argv (with env added to this
// process's environment), each given an event and answering allow.
func runAllow(b *testing.B, env []string, argv ...string) {
	ds, cpu := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(argv[0], argv[1:]...)
		if env != nil {
			cmd.Env = append(os.Environ(), env...)
		}
		cmd.Stdin = strings.NewReader(event(b.Name(), i))
		var out bytes.Buffer
		cmd.Stdout = &out
		start := time.Now()
		err := cmd.Run()
		ds, cpu = append(ds, time.Since(start)), append(cpu, cpuOf(cmd))
		if err != nil || !strings.Contains(out.String(), `"permissionDecision":"allow"`) {
			b.Fatalf("call %d: %v %s", i, err, out.String())
		}
	}
	median(b, ds, cpu)
}

// buildFloor builds bench/cmd/hookfloor as the release build does (CGO
// off, stripped).
func buildFloor(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "hookfloor")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/overseer-dev/overseer/bench/cmd/hookfloor")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the durable floor: %v\n%s", err, out)
	}
	return bin
}

// runHook times `bin --home HOME hook claude-code` (bin: overseer or the
// lean entry overseer-hook) b.N times against home. Each sub-benchmark has
// sessions of its own (repeat detection must not raise later calls).
func runHook(b *testing.B, bin, home string) {
	runAllow(b, []string{"OVERSEER_HOME=" + home}, bin, "--home", home, "hook", "claude-code", "--max-wait", "2s")
}

// BenchmarkHookProcess times, one after the other in one run: the hook
// agents run — the lean entry overseer-hook that `overseer init` installs
// — with the daemon running ("hook") and in a home with no daemon, where it
// hands the call to `overseer hook`, which judges it itself
// ("hook-no-daemon"); the same two for `overseer hook` run directly
// ("hook-full", "hook-full-no-daemon"); the bare Go hook above ("bare-go")
// and a process that does nothing ("true"). bench/hook/run.sh prints the
// ratios.
func BenchmarkHookProcess(b *testing.B) {
	bin, lean := overseertest.Binary(b), overseertest.HookBinary(b)
	home, lone := b.TempDir(), b.TempDir()
	for _, h := range []string{home, lone} {
		if err := os.WriteFile(filepath.Join(h, "policy.yaml"), []byte(benchPolicy), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	overseertest.StartDaemon(b, home)
	trueBin, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	bare := buildBare(b)
	env := append(os.Environ(), "OVERSEER_HOME="+home)

	b.Run("hook", func(b *testing.B) { runHook(b, lean, home) })
	b.Run("hook-no-daemon", func(b *testing.B) { runHook(b, lean, lone) })
	b.Run("hook-full", func(b *testing.B) { runHook(b, bin, home) })
	b.Run("hook-full-no-daemon", func(b *testing.B) { runHook(b, bin, lone) })

	b.Run("bare-go", func(b *testing.B) { runAllow(b, nil, bare) })

	// The durable floor: read the event, commit it to an SQLite file with
	// its WAL synced, print a decision (bench/cmd/hookfloor). What a hook
	// that records its call itself costs before it judges anything.
	floor, floorDB := buildFloor(b), filepath.Join(b.TempDir(), "floor.db")
	b.Run("durable-floor", func(b *testing.B) { runAllow(b, nil, floor, floorDB) })

	b.Run("true", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(trueBin)
			cmd.Env = env
			cmd.Stdin = strings.NewReader(event(b.Name(), i))
			start := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		median(b, ds, nil)
	})
}
