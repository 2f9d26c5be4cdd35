package inject_test

import (
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/guard/inject"
)

// BenchmarkScanResult scans ordinary prose of typical result sizes.
func BenchmarkScanResult(b *testing.B) {
	para := "The user reads the file and sends a report to the team; the agent must check the key before the first run. "
	for _, c := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}} {
		text := strings.Repeat(para, c.n/len(para)+1)[:c.n]
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(c.n))
			for b.Loop() {
				inject.Default().Scan(text, inject.Result)
			}
		})
	}
}
