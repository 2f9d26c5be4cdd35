// Package metrics keeps the daemon's Prometheus series and writes them in
// Prometheus' text exposition format (version 0.0.4): counters with labels,
// a histogram, gauges read at scrape time, and the Go runtime's and the
// process's series under the names the official client uses (go_*,
// process_*), so dashboards built for it keep working.
//
// It replaces github.com/prometheus/client_golang, which with its
// dependencies (client_model, common, procfs, expvar) took 0.8 MB of the
// release binary for a handful of series. A test checks the output against
// that client's, series for series.
package metrics

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ContentType is the exposition format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// family is one metric family: its name, help and type, and a function
// that writes its samples.
type family struct {
	name, help, typ string
	write           func(w *bufio.Writer, name string)
}

// Registry holds families and writes them sorted by name.
type Registry struct {
	mu       sync.Mutex
	families []*family
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

func (r *Registry) add(f *family) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.families {
		if g.name == f.name {
			panic("metrics: " + f.name + " registered twice")
		}
	}
	r.families = append(r.families, f)
}

// WriteTo writes every family in the text format.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	fams := slices.Clone(r.families)
	r.mu.Unlock()
	fams = append(fams, runtimeFamilies()...)
	fams = append(fams, processFamilies()...)
	slices.SortFunc(fams, func(a, b *family) int { return strings.Compare(a.name, b.name) })
	cw := &countingWriter{w: w}
	bw := bufio.NewWriter(cw)
	var samples bytes.Buffer
	sw := bufio.NewWriter(&samples)
	for _, f := range fams {
		samples.Reset()
		sw.Reset(&samples)
		f.write(sw, f.name)
		sw.Flush()
		if samples.Len() == 0 {
			continue // a family without series is left out, as the official client does
		}
		bw.WriteString("# HELP " + f.name + " " + escapeHelp(f.help) + "\n")
		bw.WriteString("# TYPE " + f.name + " " + f.typ + "\n")
		bw.Write(samples.Bytes())
	}
	err := bw.Flush()
	return cw.n, err
}

// Handler serves the registry.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		_, _ = r.WriteTo(w)
	})
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Counter is a counter without labels.
type Counter struct{ v atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.v.Add(1) }

// NewCounter registers a counter.
func (r *Registry) NewCounter(name, help string) *Counter {
	c := &Counter{}
	r.add(&family{name: name, help: help, typ: "counter", write: func(w *bufio.Writer, name string) {
		sample(w, name, "", float64(c.v.Load()))
	}})
	return c
}

// CounterVec is a counter with labels.
type CounterVec struct {
	labels []string
	m      sync.Map // key(values) -> *series
}

// series is one labelled counter.
type series struct {
	values []string
	n      atomic.Uint64
}

// key encodes label values unambiguously, whatever bytes they hold.
func key(values []string) string {
	var b strings.Builder
	for _, v := range values {
		b.WriteString(strconv.Itoa(len(v)) + ":" + v)
	}
	return b.String()
}

// NewCounterVec registers a counter with the given label names.
func (r *Registry) NewCounterVec(name, help string, labels ...string) *CounterVec {
	c := &CounterVec{labels: labels}
	r.add(&family{name: name, help: help, typ: "counter", write: func(w *bufio.Writer, name string) {
		var rows []*series
		c.m.Range(func(_, v any) bool {
			rows = append(rows, v.(*series))
			return true
		})
		// By label values, the first label first (as the official client).
		slices.SortFunc(rows, func(a, b *series) int { return slices.Compare(a.values, b.values) })
		for _, s := range rows {
			sample(w, name, labelPairs(c.labels, s.values), float64(s.n.Load()))
		}
	}})
	return c
}

// Inc adds one to the series of the given label values (one per label
// name; missing ones are empty). Invalid UTF-8, which Prometheus refuses
// (failing the whole scrape), is replaced first, so that values differing
// only there count as one series.
func (c *CounterVec) Inc(values ...string) {
	vals := make([]string, len(c.labels))
	for i := range min(len(vals), len(values)) {
		vals[i] = strings.ToValidUTF8(values[i], "\uFFFD")
	}
	k := key(vals)
	v, ok := c.m.Load(k)
	if !ok {
		v, _ = c.m.LoadOrStore(k, &series{values: vals})
	}
	v.(*series).n.Add(1)
}

// Histogram counts observations into cumulative buckets.
type Histogram struct {
	upper  []float64
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomic.Uint64   // float64 bits
	count  atomic.Uint64
}

// ExponentialBuckets returns n upper bounds: start, start*factor, ...
// (computed as the official client does, so the bounds print the same).
func ExponentialBuckets(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}

// NewHistogram registers a histogram with the given upper bounds
// (ascending).
func (r *Registry) NewHistogram(name, help string, buckets []float64) *Histogram {
	h := &Histogram{upper: slices.Clone(buckets), counts: make([]atomic.Uint64, len(buckets)+1)}
	r.add(&family{name: name, help: help, typ: "histogram", write: func(w *bufio.Writer, name string) {
		// Read the count first: the buckets may then hold a few more
		// observations than it, never fewer (as the official client).
		count := h.count.Load()
		var cum uint64
		for i, ub := range h.upper {
			cum += h.counts[i].Load()
			sample(w, name+"_bucket", `le="`+formatFloat(ub)+`"`, float64(cum))
		}
		cum += h.counts[len(h.upper)].Load()
		sample(w, name+"_bucket", `le="+Inf"`, float64(max(cum, count)))
		sample(w, name+"_sum", "", math.Float64frombits(h.sum.Load()))
		sample(w, name+"_count", "", float64(max(cum, count)))
	}})
	return h
}

// Observe records v.
func (h *Histogram) Observe(v float64) {
	i, _ := slices.BinarySearch(h.upper, v) // the first bound >= v
	h.counts[i].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			break
		}
	}
	h.count.Add(1)
}

// NewGaugeFunc registers a gauge whose value fn gives at each scrape.
func (r *Registry) NewGaugeFunc(name, help string, fn func() float64) {
	r.add(&family{name: name, help: help, typ: "gauge", write: func(w *bufio.Writer, name string) {
		sample(w, name, "", fn())
	}})
}

// sample writes one line: name{labels} value.
func sample(w *bufio.Writer, name, labels string, v float64) {
	w.WriteString(name)
	if labels != "" {
		w.WriteString("{" + labels + "}")
	}
	w.WriteString(" " + formatFloat(v) + "\n")
}

// labelPairs renders name="value" pairs.
func labelPairs(names, values []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		v := ""
		if i < len(values) {
			v = values[i]
		}
		b.WriteString(n + `="` + escapeLabel(v) + `"`)
	}
	return b.String()
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// escapeLabel escapes a label value (invalid UTF-8 replaced, as in Inc).
func escapeLabel(s string) string { return labelEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD")) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }

// formatFloat prints a value as the official client does.
func formatFloat(f float64) string {
	switch {
	case f == 1:
		return "1"
	case f == 0:
		return "0"
	case f == -1:
		return "-1"
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, +1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
