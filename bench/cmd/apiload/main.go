// Command apiload measures the throughput of an HTTP JSON endpoint: it
// POSTs the same body from -c concurrent keep-alive clients for -d, and
// prints one line of JSON with the requests per second, the median and
// 99th percentile latency, and the number of errors.
//
//	apiload -url http://127.0.0.1:7777/api/v1/actions -c 32 -d 10s \
//	  -body '{"tool":"Read","args":{"file_path":"README.md"},"cwd":"/src"}' \
//	  -expect '"decision":"allow"'
//
// Every "{{n}}" in the body is replaced by the request's number, so that
// requests can differ (for example one agent session each, which keeps
// Overseer's repeat detection from escalating identical calls).
//
// A request is an error when it fails, its status is not 2xx, or its body
// lacks the -expect text. Requests still running when the time is up are
// not counted.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is one load run.
type Config struct {
	URL         string
	Concurrency int
	Duration    time.Duration
	Warmup      time.Duration // requests in this first stretch are not counted
	Body        []byte        // "{{n}}" is replaced by the request's number
	Expect      string        // text every response body must contain; empty: any
	Timeout     time.Duration
}

// Result is what a run measured.
type Result struct {
	Requests    int64          `json:"requests"` // successful requests counted
	Errors      int64          `json:"errors"`
	Seconds     float64        `json:"seconds"`
	RPS         float64        `json:"rps"`
	P50Micros   float64        `json:"p50_us"`
	P99Micros   float64        `json:"p99_us"`
	Concurrency int            `json:"concurrency"`
	Status      map[string]int `json:"status,omitempty"` // counts by HTTP status, "error" for failed requests
	FirstError  string         `json:"first_error,omitempty"`
}

// errConfig is returned for flags that cannot make a run.
var errConfig = errors.New("apiload: bad configuration")

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

// parseFlags reads the command line. -body may be JSON text or @file.
func parseFlags(args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("apiload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	var body string
	fs.StringVar(&cfg.URL, "url", "", "URL to POST to (required)")
	fs.IntVar(&cfg.Concurrency, "c", 32, "concurrent clients, each with its own keep-alive connection")
	fs.DurationVar(&cfg.Duration, "d", 10*time.Second, "how long to measure")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "load before measuring, not counted")
	fs.StringVar(&body, "body", "{}", `request body: JSON text, or @file to read it from a file; "{{n}}" is replaced by the request's number`)
	fs.StringVar(&cfg.Expect, "expect", "", "text every response body must contain")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "per-request timeout")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("%w: unexpected arguments %q", errConfig, fs.Args())
	}
	if name, ok := strings.CutPrefix(body, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return Config{}, fmt.Errorf("%w: -body: %v", errConfig, err)
		}
		cfg.Body = b
	} else {
		cfg.Body = []byte(body)
	}
	return cfg, cfg.validate()
}

func (c Config) validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return fmt.Errorf("%w: -url is required", errConfig)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("%w: -url %q is not an http(s) URL", errConfig, c.URL)
	case c.Concurrency < 1:
		return fmt.Errorf("%w: -c must be at least 1", errConfig)
	case c.Duration <= 0:
		return fmt.Errorf("%w: -d must be positive", errConfig)
	case c.Warmup < 0:
		return fmt.Errorf("%w: -warmup must not be negative", errConfig)
	case c.Timeout <= 0:
		return fmt.Errorf("%w: -timeout must be positive", errConfig)
	case !json.Valid(bytes.ReplaceAll(c.Body, []byte(counterMark), []byte("0"))):
		return fmt.Errorf("%w: -body is not valid JSON", errConfig)
	}
	return nil
}

// counterMark is replaced in the body by the request's number.
const counterMark = "{{n}}"

// bodies makes the request bodies: the body's parts around counterMark
// joined by a run-wide counter.
type bodies struct {
	parts [][]byte
	n     atomic.Int64
}

func (b *bodies) next() []byte {
	if len(b.parts) == 1 {
		return b.parts[0]
	}
	num := strconv.AppendInt(nil, b.n.Add(1), 10)
	out := make([]byte, 0, len(b.parts[0])*2+len(b.parts)*len(num))
	for i, p := range b.parts {
		if i > 0 {
			out = append(out, num...)
		}
		out = append(out, p...)
	}
	return out
}

// worker is one client's tally.
type worker struct {
	lat      []time.Duration
	errs     int64
	status   map[string]int
	firstErr string
}

// Run applies the load and returns what it measured. It returns when the
// warm-up and the measured time are over, or ctx ends; every client
// goroutine has exited by then.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	tr := &http.Transport{
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		MaxConnsPerHost:     cfg.Concurrency,
		IdleConnTimeout:     time.Minute,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: cfg.Timeout}

	runCtx, cancel := context.WithTimeout(ctx, cfg.Warmup+cfg.Duration)
	defer cancel()
	start := time.Now()
	measureFrom := start.Add(cfg.Warmup)
	measureTo := measureFrom.Add(cfg.Duration)

	bs := &bodies{parts: bytes.Split(cfg.Body, []byte(counterMark))}
	workers := make([]*worker, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{status: map[string]int{}}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(runCtx, client, cfg, bs, measureFrom, measureTo)
		}()
	}
	wg.Wait()
	end := time.Now()
	if end.After(measureTo) {
		end = measureTo
	}

	res := Result{Concurrency: cfg.Concurrency, Status: map[string]int{}}
	var all []time.Duration
	for _, w := range workers {
		all = append(all, w.lat...)
		res.Errors += w.errs
		for k, n := range w.status {
			res.Status[k] += n
		}
		if res.FirstError == "" {
			res.FirstError = w.firstErr
		}
	}
	res.Requests = int64(len(all))
	res.Seconds = end.Sub(measureFrom).Seconds()
	if res.Seconds <= 0 {
		return res, fmt.Errorf("apiload: the run ended before measuring: %w", context.Cause(ctx))
	}
	res.RPS = float64(res.Requests) / res.Seconds
	slices.Sort(all)
	res.P50Micros = micros(percentile(all, 0.50))
	res.P99Micros = micros(percentile(all, 0.99))
	return res, nil
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// loop sends requests until ctx ends, counting those that start and end
// within [from, to].
func (w *worker) loop(ctx context.Context, client *http.Client, cfg Config, bs *bodies, from, to time.Time) {
	for ctx.Err() == nil {
		t0 := time.Now()
		status, err := post(ctx, client, cfg, bs.next())
		t1 := time.Now()
		if ctx.Err() != nil || t0.Before(from) || t1.After(to) {
			continue // warm-up, or cut off by the end of the run
		}
		w.status[status]++
		if err != nil {
			w.errs++
			if w.firstErr == "" {
				w.firstErr = err.Error()
			}
			continue
		}
		w.lat = append(w.lat, t1.Sub(t0))
	}
}

// post sends one request and reads the whole response, so the connection
// is reused.
func post(ctx context.Context, client *http.Client, cfg Config, body []byte) (status string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return "error", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "error", err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	status = strconv.Itoa(resp.StatusCode)
	switch {
	case err != nil:
		return status, err
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return status, fmt.Errorf("status %d: %.200s", resp.StatusCode, got)
	case cfg.Expect != "" && !bytes.Contains(got, []byte(cfg.Expect)):
		return status, fmt.Errorf("response lacks %q: %.200s", cfg.Expect, got)
	}
	return status, nil
}

// percentile returns the q-quantile of sorted by the nearest-rank method.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.999999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
