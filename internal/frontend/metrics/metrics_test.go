package metrics

import (
	"bytes"
	"net/http/httptest"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ops are what the daemon does to its series, applied to both
// implementations: label values that need escaping, observations on and
// between bucket bounds, below the first and above the last.
type ops struct {
	inc      func(values ...string)
	incPlain func()
	observe  func(float64)
}

func apply(o ops) {
	for _, v := range [][]string{{"block"}, {"auto"}, {"block"}, {`we"ird\ one` + "\nline"}, {"a"}, {"ab"}, {""}} {
		o.inc(v...)
	}
	o.incPlain()
	o.incPlain()
	for _, v := range []float64{0, 0.00005, 0.0001, 0.00015, 0.0032, 0.0064, 0.1, 0.8192, 0.82, 3, 1e9} {
		o.observe(v)
	}
}

const (
	actionsHelp = "Actions submitted, by verdict level."
	submitHelp  = "Time to judge and durably record a submitted action.\nSecond line with a \\ backslash."
)

// ours renders the daemon's kind of series with this package.
func ours(t *testing.T) string {
	t.Helper()
	r := NewRegistry()
	vec := r.NewCounterVec("overseer_actions_total", actionsHelp, "level")
	r.NewCounterVec("overseer_quota_refusals_total", "Never incremented here.", "scope", "limit")
	plain := r.NewCounter("overseer_auth_failures_total", "Requests that presented a wrong credential.")
	h := r.NewHistogram("overseer_submit_seconds", submitHelp, ExponentialBuckets(0.0001, 2, 14))
	r.NewGaugeFunc("overseer_approvals_pending", "Approvals waiting for a person.", func() float64 { return 3 })
	r.NewGaugeFunc("overseer_database_bytes", "Size of the database.", func() float64 { return -1 })
	apply(ops{inc: vec.Inc, incPlain: plain.Inc, observe: h.Observe})
	var b bytes.Buffer
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// official renders the same with github.com/prometheus/client_golang,
// with its Go and process collectors.
func official(t *testing.T) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "overseer_actions_total", Help: actionsHelp}, []string{"level"})
	unused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "overseer_quota_refusals_total", Help: "Never incremented here."}, []string{"scope", "limit"})
	plain := prometheus.NewCounter(prometheus.CounterOpts{Name: "overseer_auth_failures_total", Help: "Requests that presented a wrong credential."})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "overseer_submit_seconds", Help: submitHelp,
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 14)})
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "overseer_approvals_pending", Help: "Approvals waiting for a person."}, func() float64 { return 3 })
	db := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "overseer_database_bytes", Help: "Size of the database."}, func() float64 { return -1 })
	reg.MustRegister(vec, unused, plain, h, pending, db, prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	apply(ops{inc: func(v ...string) { vec.WithLabelValues(v...).Inc() }, incPlain: plain.Inc, observe: h.Observe})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// families splits an exposition into families by name.
func families(text string) map[string]string {
	out := map[string]string{}
	name := ""
	for _, line := range strings.SplitAfter(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ = strings.Cut(rest, " ")
		}
		out[name] += line
	}
	return out
}

var typeLine = regexp.MustCompile(`(?m)^# TYPE .*$`)

// TestSameAsTheOfficialClient: the daemon's own series print byte for byte
// as github.com/prometheus/client_golang prints them, and the runtime's and
// the process's series have the official collectors' names and types.
func TestSameAsTheOfficialClient(t *testing.T) {
	got, want := families(ours(t)), families(official(t))
	var names []string
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !strings.HasPrefix(name, "overseer_") {
			continue
		}
		if got[name] != want[name] {
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", name, got[name], want[name])
		}
	}
	for _, name := range names {
		if strings.HasPrefix(name, "overseer_") {
			continue
		}
		if runtime.GOOS != "linux" && strings.HasPrefix(name, "process_") {
			continue
		}
		if g, w := typeLine.FindString(got[name]), typeLine.FindString(want[name]); g != w {
			t.Errorf("%s: %q, want %q", name, g, w)
		}
	}
	// Series that do not move between the two scrapes print the same.
	stable := []string{"go_gc_gogc_percent", "go_gc_gomemlimit_bytes", "go_sched_gomaxprocs_threads", "go_info"}
	if runtime.GOOS == "linux" {
		stable = append(stable, "process_start_time_seconds", "process_max_fds", "process_virtual_memory_max_bytes")
	}
	noHelp := regexp.MustCompile(`(?m)^# HELP .*\n`)
	for _, name := range stable {
		if noHelp.ReplaceAllString(got[name], "") != noHelp.ReplaceAllString(want[name], "") {
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", name, got[name], want[name])
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is not a series of the official client", name)
		}
	}
}

// TestParses: a scrape parses with Prometheus' own parser, values and all.
func TestParses(t *testing.T) {
	r := NewRegistry()
	vec := r.NewCounterVec("x_total", "x", "a", "b")
	vec.Inc("1", `"2"`)
	vec.Inc("1")
	vec.Inc("\xff")
	vec.Inc("\xfe")
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != ContentType {
		t.Errorf("Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, rec.Body.String())
	}
	x := mfs["x_total"]
	if x == nil || len(x.Metric) != 3 {
		t.Fatalf("x_total: %v", x)
	}
	var quoted, replaced bool
	for _, m := range x.Metric {
		quoted = quoted || m.GetLabel()[1].GetValue() == `"2"`
		replaced = replaced || m.GetLabel()[0].GetValue() == "\uFFFD" && m.GetCounter().GetValue() == 2
	}
	if !quoted || !replaced {
		t.Errorf("label values lost their quotes or kept invalid UTF-8: %v", x.Metric)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_duration_seconds"} {
		if mfs[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if runtime.GOOS == "linux" {
		if mfs["process_cpu_seconds_total"] == nil {
			t.Error("no process_cpu_seconds_total")
		}
		for _, name := range []string{"process_resident_memory_bytes", "process_start_time_seconds", "process_open_fds"} {
			if m := mfs[name]; m == nil || m.Metric[0].GetGauge().GetValue()+m.Metric[0].GetCounter().GetValue() <= 0 {
				t.Errorf("%s missing or not positive: %v", name, m)
			}
		}
	}
}

// TestConcurrentUpdates: counts are exact under concurrent updates (run
// with -race in CI).
func TestConcurrentUpdates(t *testing.T) {
	r := NewRegistry()
	vec := r.NewCounterVec("c_total", "c", "l")
	h := r.NewHistogram("h_seconds", "h", []float64{1, 2})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				vec.Inc([]string{"a", "b"}[i%2])
				h.Observe(1.5)
			}
		}()
	}
	wg.Wait()
	var b bytes.Buffer
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`c_total{l="a"} 4000`, `c_total{l="b"} 4000`, `h_seconds_bucket{le="1"} 0`,
		`h_seconds_bucket{le="2"} 8000`, `h_seconds_sum 12000`, `h_seconds_count 8000`} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("lacks %s", want)
		}
	}
}
