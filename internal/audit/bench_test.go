package audit_test

import (
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/clock"
)

// BenchmarkAppendParallel measures durable appends per second with many
// concurrent appenders on a real SQLite file (synchronous=FULL): group commit
// lets them share commits. It also reports the process's CPU time per
// append, which, unlike appends/s, does not depend on what else the machine
// is running.
func BenchmarkAppendParallel(b *testing.B) {
	db, _ := openDB(b)
	l := audit.New(db, clock.Real{})
	defer l.Close()
	data := map[string]any{"command": "go test ./...", "level": "auto", "reasons": []string{"rule allow-go"}}
	b.SetParallelism(32) // 32 appenders per CPU: a busy daemon
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := l.Append(b.Context(), audit.Entry{Type: audit.TypeVerdict, ActionID: "a", Agent: "claude-code",
				Session: "s", Tool: "Bash", Data: data}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/append")
}

// BenchmarkAppendSerial is one appender waiting for each commit: the
// latency of a single durable append.
func BenchmarkAppendSerial(b *testing.B) {
	db, _ := openDB(b)
	l := audit.New(db, clock.Real{})
	defer l.Close()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if _, err := l.Append(b.Context(), audit.Entry{Type: audit.TypeAction, Data: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
}

// BenchmarkVerify measures verification speed over a 10,000-record chain.
func BenchmarkVerify(b *testing.B) {
	db, _ := openDB(b)
	l := audit.New(db, clock.Real{})
	const n = 10000
	errs := make(chan error, 100)
	for range 100 {
		go func() {
			for range n / 100 {
				if _, err := l.Append(b.Context(), audit.Entry{Type: audit.TypeAction, Data: map[string]int{"x": 1}}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 100 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	l.Close()
	b.ResetTimer()
	for range b.N {
		rep, err := audit.Verify(b.Context(), db)
		if err != nil || !rep.OK {
			b.Fatal(rep, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}
