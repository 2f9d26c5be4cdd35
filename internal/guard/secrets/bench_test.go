package secrets

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchBody is a realistic body of about n bytes: JSON records with prose,
// identifiers, UUID-like ids, hashes, URLs and code, a base64 blob, and one
// secret near the end.
func benchBody(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(`the agent reads the config file and sends a request to the api with a token header
		function returns value error handler retry backoff key value store session cookie auth user password reset
		deploy build test lint format package module import export class struct interface method field`)
	hexs := func(k int) string {
		const h = "0123456789abcdef"
		b := make([]byte, k)
		for i := range b {
			b[i] = h[r.IntN(16)]
		}
		return string(b)
	}
	var b strings.Builder
	b.WriteString(`{"records":[`)
	i := 0
	for b.Len() < n-4096 {
		if i > 0 {
			b.WriteByte(',')
		}
		var prose []string
		for k := 0; k < 12+r.IntN(20); k++ {
			prose = append(prose, words[r.IntN(len(words))])
		}
		fmt.Fprintf(&b, `{"id":"%s-%s-%s-%s-%s","commit":"%s","url":"https://api.example.com/v1/items/%d?page=%d",`+
			`"text":"%s","code":"func f%d(x int) int { return x * %d }","tags":["a","b"]}`,
			hexs(8), hexs(4), hexs(4), hexs(4), hexs(12), hexs(40), r.IntN(1e6), r.IntN(50), strings.Join(prose, " "), i, i)
		if i%200 == 0 {
			blob := make([]byte, 600)
			for k := range blob {
				blob[k] = byte(r.IntN(256))
			}
			fmt.Fprintf(&b, `,{"image":"data:image/png;base64,%s"}`, base64.StdEncoding.EncodeToString(blob))
		}
		i++
	}
	b.WriteString(`],"auth":{"token":"ghp_C3N8FeKjFTrKCb0Tz8BbwTKx8EqwtHmcOJEZ"}}`)
	return b.String()
}

// benchRequest is a typical 1 KB request: a JSON body and a URL.
func benchRequest() []Part {
	body := benchBody(5000)[:900]
	return []Part{
		{Name: "url", Text: "https://api.example.com/v1/search?q=retry+backoff&page=2&per_page=50"},
		{Name: "query q", Text: "retry backoff"}, {Name: "query page", Text: "2"}, {Name: "query per_page", Text: "50"},
		{Name: "header Content-Type", Text: "application/json"},
		{Name: "body", Text: body},
	}
}

func benchAnalyzer(b *testing.B) *Analyzer {
	fp, err := NewFingerprints(make([]byte, KeySize))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		fp.Add(fmt.Sprintf("value %d", i), fmt.Sprintf("Zx81mQpL2vN7rT4wK9sB6yH3cF5gJ0a%02d", i))
	}
	return New(Options{Known: fp})
}

// reportMedian runs fn b.N times and reports the medians of each call's
// wall time (p50-ns) and of the CPU time the process spent (p50-cpu-ns):
// on a machine shared with other work the CPU time is the stable figure.
func reportMedian(b *testing.B, fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fn() // warm: rules parsed, regexes compiled
	walls := make([]time.Duration, 0, b.N)
	cpus := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		c0 := threadCPU()
		t := time.Now()
		fn()
		walls = append(walls, time.Since(t))
		cpus = append(cpus, threadCPU()-c0)
	}
	b.StopTimer()
	b.ReportMetric(float64(median(walls).Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(median(cpus).Nanoseconds()), "p50-cpu-ns")
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// threadCPU is the CPU time of the process (every goroutine of a scan,
// and the garbage collector).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// BenchmarkScan1MB: the analyser on a 1 MB body (goal: median under 5 ms).
func BenchmarkScan1MB(b *testing.B) {
	a := benchAnalyzer(b)
	body := benchBody(1 << 20)
	b.SetBytes(int64(len(body)))
	var n int
	reportMedian(b, func() { n = len(a.Scan(body)) })
	if n == 0 {
		b.Fatal("the body's token was not found")
	}
}

// BenchmarkScan1KB: the analyser on a typical 1 KB request (goal: median
// under 50 µs).
func BenchmarkScan1KB(b *testing.B) {
	a := benchAnalyzer(b)
	parts := benchRequest()
	reportMedian(b, func() { a.ScanParts(parts) })
}

// BenchmarkScan1MBShortValue: the 1 MB body with a short known value (a
// 16-byte password) besides the long ones: the pass over the text's tokens
// and their soft-separated pieces runs.
func BenchmarkScan1MBShortValue(b *testing.B) {
	a := benchAnalyzer(b)
	fp, err := NewFingerprints(make([]byte, KeySize))
	if err != nil {
		b.Fatal(err)
	}
	fp.Add("short", "0ZzlsUXnDAUyQJKC")
	a = a.With(fp)
	body := benchBody(1 << 20)
	b.SetBytes(int64(len(body)))
	reportMedian(b, func() { a.Scan(body) })
}
