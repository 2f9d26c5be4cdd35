package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	bodyFile := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(bodyFile, []byte(`{"tool":"Read"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantErr  bool
		wantBody string
		wantC    int
	}{
		{"defaults", []string{"-url", "http://127.0.0.1:1/x"}, false, "{}", 32},
		{"body inline", []string{"-url", "http://h/x", "-body", `{"a":1}`, "-c", "4"}, false, `{"a":1}`, 4},
		{"body from file", []string{"-url", "http://h/x", "-body", "@" + bodyFile}, false, `{"tool":"Read"}`, 32},
		{"missing url", nil, true, "", 0},
		{"not http", []string{"-url", "ftp://h/x"}, true, "", 0},
		{"no host", []string{"-url", "http:///x"}, true, "", 0},
		{"zero clients", []string{"-url", "http://h/x", "-c", "0"}, true, "", 0},
		{"zero duration", []string{"-url", "http://h/x", "-d", "0s"}, true, "", 0},
		{"negative warmup", []string{"-url", "http://h/x", "-warmup", "-1s"}, true, "", 0},
		{"bad json body", []string{"-url", "http://h/x", "-body", "{"}, true, "", 0},
		{"missing body file", []string{"-url", "http://h/x", "-body", "@" + bodyFile + ".no"}, true, "", 0},
		{"extra argument", []string{"-url", "http://h/x", "more"}, true, "", 0},
		{"unknown flag", []string{"-url", "http://h/x", "-n", "3"}, true, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseFlags(%q) accepted %+v", tt.args, cfg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(cfg.Body) != tt.wantBody || cfg.Concurrency != tt.wantC {
				t.Errorf("body %s, c %d; want %s, %d", cfg.Body, cfg.Concurrency, tt.wantBody, tt.wantC)
			}
		})
	}
}

func TestRun(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch {
		case r.Method != http.MethodPost || string(b) != `{"tool":"Read"}`:
			http.Error(w, "bad request", http.StatusBadRequest)
		case strings.HasSuffix(r.URL.Path, "/flaky") && n.Add(1)%3 == 0:
			http.Error(w, "boom", http.StatusInternalServerError)
		case strings.HasSuffix(r.URL.Path, "/deny"):
			io.WriteString(w, `{"decision":"deny"}`)
		default:
			io.WriteString(w, `{"decision":"allow"}`)
		}
	}))
	defer srv.Close()

	tests := []struct {
		name       string
		path       string
		wantErrors bool
		wantOK     bool
	}{
		{"all allowed", "/ok", false, true},
		{"some fail", "/flaky", true, true},
		{"unexpected body", "/deny", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Config{
				URL: srv.URL + tt.path, Concurrency: 4, Duration: 150 * time.Millisecond, Warmup: 20 * time.Millisecond,
				Body: []byte(`{"tool":"Read"}`), Expect: `"decision":"allow"`, Timeout: time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			if (res.Errors > 0) != tt.wantErrors {
				t.Errorf("errors = %d (first: %s), want errors: %v", res.Errors, res.FirstError, tt.wantErrors)
			}
			if (res.Requests > 0) != tt.wantOK {
				t.Errorf("requests = %d, want some: %v", res.Requests, tt.wantOK)
			}
			if res.Requests > 0 && (res.RPS <= 0 || res.P50Micros <= 0 || res.P99Micros < res.P50Micros) {
				t.Errorf("implausible figures: %+v", res)
			}
			if res.Seconds <= 0 || res.Seconds > 0.2 {
				t.Errorf("measured %.3fs, want about 0.15s", res.Seconds)
			}
		})
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	_, err := Run(context.Background(), Config{URL: "http://h/x", Concurrency: 0, Duration: time.Second, Body: []byte("{}"), Timeout: time.Second})
	if !errors.Is(err, errConfig) {
		t.Fatalf("err = %v, want errConfig", err)
	}
}

func TestRunUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there any more
	res, err := Run(context.Background(), Config{URL: addr, Concurrency: 2, Duration: 50 * time.Millisecond,
		Body: []byte("{}"), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Errors == 0 || res.Status["error"] == 0 {
		t.Errorf("against a closed port: %+v, want only errors", res)
	}
}

func TestBodies(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"no mark", `{"a":1}`, []string{`{"a":1}`, `{"a":1}`}},
		{"one mark", `{"session":"s{{n}}"}`, []string{`{"session":"s1"}`, `{"session":"s2"}`}},
		{"two marks", `{"a":"{{n}}","b":{{n}}}`, []string{`{"a":"1","b":1}`, `{"a":"2","b":2}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs := &bodies{parts: bytes.Split([]byte(tt.body), []byte(counterMark))}
			for i, want := range tt.want {
				if got := string(bs.next()); got != want {
					t.Errorf("body %d = %s, want %s", i+1, got, want)
				}
			}
		})
	}
}

func TestRunNumbersBodies(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[string(b)]++
		mu.Unlock()
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{URL: srv.URL, Concurrency: 3, Duration: 50 * time.Millisecond,
		Body: []byte(`{"session":"s{{n}}"}`), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if res.Requests == 0 || len(seen) < int(res.Requests) {
		t.Fatalf("%d requests counted, %d distinct bodies seen", res.Requests, len(seen))
	}
	for b, n := range seen {
		if n != 1 {
			t.Errorf("body %s sent %d times", b, n)
		}
	}
}
