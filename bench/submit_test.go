package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// BenchmarkSubmit measures what POST /api/v1/actions costs inside the
// kernel, without HTTP: an auto action (a Read in the project) submitted by
// 32 goroutines per core against the built-in policy with its guards and a
// real SQLite home. "recorded" is Submit (judged, the action and its
// verdict durably in the audit log); "judged" is Evaluate alone (the API's
// dry run). Their ratio is what the API's recorded/dry-run ratio is made of;
// cpu-ns/action is the CPU (all goroutines) each costs.
func BenchmarkSubmit(b *testing.B) {
	for _, mode := range []string{"recorded", "judged"} {
		b.Run(mode, func(b *testing.B) {
			home := b.TempDir()
			proj := settledProject(b)
			k, err := kernel.Open(context.Background(), kernel.Config{Home: home})
			if err != nil {
				b.Fatal(err)
			}
			defer k.Close()
			var n atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			cpu0 := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					i := n.Add(1)
					a := &action.Action{Tool: "Read", Kind: action.KindFileRead, Agent: "bench",
						Session: "load-" + strconv.FormatInt(i, 10), Cwd: proj,
						Args: map[string]any{"file_path": "README.md"}}
					if mode == "judged" {
						kernel.MintID(a)
						if v := k.Evaluate(ctx, a); v.Level != action.Auto {
							b.Fatalf("level %s, want auto", v.Level)
						}
						continue
					}
					sub, err := k.Submit(ctx, a)
					if err != nil {
						b.Fatal(err)
					}
					if sub.Verdict.Level != action.Auto {
						b.Fatalf("level %s, want auto", sub.Verdict.Level)
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "actions/s")
			// The process's CPU time per action (the audit writer's
			// included), which a busy machine inflates less than the wall.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/action")
		})
	}
}

var (
	projOnce sync.Once
	projDir  string
	projErr  error
)

// settledProject is a project directory with a README.md written over
// guard.RacyWindow ago, shared by the benchmarks of this process: a file
// changed within that window is hashed at every read, as it may still
// change unseen, where a project's files are nearly always older. The
// first call waits for the window to pass.
func settledProject(b *testing.B) string {
	projOnce.Do(func() {
		if projDir, projErr = os.MkdirTemp("", "bench-proj-"); projErr != nil {
			return
		}
		projErr = os.WriteFile(filepath.Join(projDir, "README.md"), []byte("# x\n"), 0o600)
		time.Sleep(guard.RacyWindow + 100*time.Millisecond)
	})
	if projErr != nil {
		b.Fatal(projErr)
	}
	return projDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if projDir != "" {
		os.RemoveAll(projDir)
	}
	os.Exit(code)
}
