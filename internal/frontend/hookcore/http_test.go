package hookcore

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/apiauth"
)

func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		status   int
		body     string
		ok       bool
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, "hello", true},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nhel\r\n2\r\nlo\r\n0\r\nT: v\r\n\r\n", 200, "hello", true},
		{"to the end", "HTTP/1.0 200 OK\r\n\r\nhello", 200, "hello", true},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", 204, "", true},
		{"error", "HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\n{}", 429, "{}", true},
		{"not http", "SSH-2.0-OpenSSH\r\n\r\n", 0, "", false},
		{"bad status", "HTTP/1.1 2x0 OK\r\n\r\n", 0, "", false},
		{"informational", "HTTP/1.1 100 Continue\r\n\r\n", 0, "", false},
		{"cut short", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", 0, "", false},
		{"headers cut short", "HTTP/1.1 200 OK\r\nContent-Le", 0, "", false},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 0, "", false},
		{"length and chunked", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 0, "", false},
		{"other encoding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx", 0, "", false},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, "", false},
		{"huge length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", 0, "", false},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, "", false},
		{"chunk without its line end", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhelo\r\n0\r\n\r\n", 0, "", false},
		{"chunks cut short", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", 0, "", false},
		{"empty", "", 0, "", false},
	} {
		status, _, body, err := readAnswer(bufio.NewReader(strings.NewReader(tc.in)), "GET")
		if (err == nil) != tc.ok || tc.ok && (status != tc.status || string(body) != tc.body) {
			t.Errorf("%s: %d %q %v", tc.name, status, body, err)
		}
	}
}

// TestRoundTripWithGoServer: the answers of Go's HTTP server — the
// daemon's — in each framing it uses.
func TestRoundTripWithGoServer(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	var v apiauth.Verifier
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nonce, ok := v.Verify("tok", r.Header.Get("Authorization"), r.Method, r.RequestURI, time.Now())
		if !ok || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "who?", 401)
			return
		}
		w.Header().Set(apiauth.ProofHeader, apiauth.Proof("tok", nonce))
		switch r.URL.Path {
		case "/small":
			_, _ = w.Write([]byte(`{"a":1}`))
		case "/chunked":
			_, _ = w.Write([]byte(big[:10]))
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte(big[10:]))
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for path, want := range map[string]string{"/small": `{"a":1}`, "/chunked": big} {
		status, _, body, err := roundTrip(context.Background(), addr, "POST", path, "tok", []byte("{}"))
		if err != nil || status != 200 || string(body) != want {
			t.Errorf("%s: %d %.40q %v", path, status, body, err)
		}
	}
	if status, _, _, err := roundTrip(context.Background(), addr, "POST", "/small", "", []byte("{}")); err != nil || status != 401 {
		t.Errorf("without the token: %d %v", status, err)
	}
}

// FuzzReadAnswer: any bytes from the daemon's port end in an answer or an
// error, never a panic or a body larger than the bound.
func FuzzReadAnswer(f *testing.F) {
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n0\r\n\r\n")
	f.Add("HTTP/1.0 500 x\r\n\r\n{}")
	f.Fuzz(func(t *testing.T, s string) {
		status, _, body, err := readAnswer(bufio.NewReader(strings.NewReader(s)), "POST")
		if err == nil && (status < 200 || status > 599 || len(body) > maxAnswer) {
			t.Fatalf("%q: %d, %d bytes", s, status, len(body))
		}
	})
}
