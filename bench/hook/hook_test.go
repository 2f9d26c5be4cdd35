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

// event is a Claude Code PreToolUse event for call i. Each call has its
// own session, so repeat detection never raises the benchmark's calls.
func event(i int) string {
	return fmt.Sprintf(`{"session_id":"bench-%d","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","permission_mode":"default",`+
		`"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo bench %d","description":"bench"},`+
		`"tool_use_id":"toolu_bench_%d"}`, i, i, i)
}

// median reports the median of ds in milliseconds as the metric "ms/median".
func median(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)/2])/float64(time.Millisecond), "ms/median")
}

func BenchmarkHookProcess(b *testing.B) {
	bin := overseertest.Binary(b)
	home := b.TempDir()
	if err := os.WriteFile(filepath.Join(home, "policy.yaml"), []byte(benchPolicy), 0o600); err != nil {
		b.Fatal(err)
	}
	overseertest.StartDaemon(b, home)
	trueBin, err := exec.LookPath("true")
	if err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "OVERSEER_HOME="+home)

	b.Run("hook", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(bin, "--home", home, "hook", "claude-code", "--max-wait", "2s")
			cmd.Env = env
			cmd.Stdin = strings.NewReader(event(i))
			var out bytes.Buffer
			cmd.Stdout = &out
			start := time.Now()
			err := cmd.Run()
			ds = append(ds, time.Since(start))
			if err != nil || !strings.Contains(out.String(), `"permissionDecision":"allow"`) {
				b.Fatalf("call %d: %v %s", i, err, out.String())
			}
		}
		median(b, ds)
	})

	b.Run("true", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			cmd := exec.Command(trueBin)
			cmd.Env = env
			cmd.Stdin = strings.NewReader(event(i))
			start := time.Now()
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		median(b, ds)
	})
}
