package netguard

// Live tests. They only ever listen on and connect to loopback addresses.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// mapResolver resolves made-up names from a table.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ips, ok := m[host]; ok {
		return ips, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var loop = netip.MustParseAddr("127.0.0.1")

// countingServer is an httptest server on 127.0.0.1 that counts requests.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		_, _ = io.WriteString(w, "hello")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// watchListener listens on 127.0.0.1 and records whether Accept ever
// returned a connection. stop closes the listener and reports that.
func watchListener(t *testing.T) (port string, stop func() bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return // listener closed
			}
			accepted.Store(true)
			c.Close()
		}
	}()
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	return port, func() bool {
		ln.Close()
		<-done
		return accepted.Load()
	}
}

func TestClientRefusesLoopbackServer(t *testing.T) {
	srv, hits := countingServer(t, nil)
	u, _ := url.Parse(srv.URL)
	port := u.Port()
	client := NewClient(Policy{}, ClientOptions{Resolver: mapResolver{}})
	for _, raw := range []string{
		srv.URL,
		"http://0x7f.1:" + port + "/",
		"http://2130706433:" + port + "/",
		"http://017700000001:" + port + "/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://localhost:" + port + "/",
		"http://１２７.０.０.１:" + port + "/",
	} {
		t.Run(raw, func(t *testing.T) {
			resp, err := client.Get(raw)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s succeeded, want refused", raw)
			}
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("GET %s = %v, want ErrRefused", raw, err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("loopback server saw %d requests, want 0", n)
	}
}

func TestDialerRefusesBeforeConnecting(t *testing.T) {
	port, stop := watchListener(t)
	c, err := Policy{}.compile()
	if err != nil {
		t.Fatal(err)
	}
	d := &dialer{pol: c, resolver: mapResolver{
		"rebind.test": {loop},
		"mixed.test":  {netip.MustParseAddr("127.0.0.2"), loop},
		"mapped.test": {netip.MustParseAddr("::ffff:127.0.0.1")},
	}}
	d.net = net.Dialer{Timeout: time.Second, ControlContext: d.control}
	ctx := context.Background()
	for _, addr := range []string{
		"127.0.0.1:" + port,
		"0x7f.1:" + port,
		"[::ffff:7f00:1]:" + port,
		"rebind.test:" + port,
		"mapped.test:" + port,
		"localhost:" + port,
	} {
		t.Run(addr, func(t *testing.T) {
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				conn.Close()
				t.Fatalf("dial %s succeeded", addr)
			}
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("dial %s = %v, want ErrRefused", addr, err)
			}
		})
	}
	t.Run("mixed answer refuses every address", func(t *testing.T) {
		// 127.0.0.2 is allowed, 127.0.0.1 is not: the whole answer is refused.
		c2, err := Policy{AllowHosts: []string{"127.0.0.2"}}.compile()
		if err != nil {
			t.Fatal(err)
		}
		d2 := &dialer{pol: c2, resolver: d.resolver}
		d2.net = net.Dialer{Timeout: time.Second, ControlContext: d2.control}
		if conn, err := d2.DialContext(ctx, "tcp", "mixed.test:"+port); !errors.Is(err, ErrRefused) {
			if conn != nil {
				conn.Close()
			}
			t.Fatalf("dial mixed.test = %v, want ErrRefused", err)
		}
	})
	t.Run("connect-time control", func(t *testing.T) {
		// Bypass resolve: the socket's own check still refuses.
		conn, err := d.net.DialContext(ctx, "tcp", "127.0.0.1:"+port)
		if err == nil {
			conn.Close()
			t.Fatal("raw dial to 127.0.0.1 succeeded")
		}
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("raw dial = %v, want ErrRefused", err)
		}
	})
	t.Run("non-tcp network", func(t *testing.T) {
		if _, err := d.DialContext(ctx, "udp", "rebind.test:"+port); !errors.Is(err, ErrRefused) {
			t.Fatalf("udp dial = %v, want ErrRefused", err)
		}
	})
	t.Run("unknown name", func(t *testing.T) {
		if _, err := d.DialContext(ctx, "tcp", "nowhere.test:"+port); err == nil {
			t.Fatal("dial of an unresolvable name succeeded")
		}
	})
	if stop() {
		t.Fatal("the listener accepted a connection; the dialer must refuse before connecting")
	}
}

func TestClientRefusesRebindingName(t *testing.T) {
	port, stop := watchListener(t)
	client := NewClient(Policy{}, ClientOptions{Resolver: mapResolver{"rebind.test": {loop}}})
	resp, err := client.Get("http://rebind.test:" + port + "/")
	if err == nil {
		resp.Body.Close()
		t.Fatal("GET rebind.test succeeded")
	}
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("GET rebind.test = %v, want ErrRefused", err)
	}
	if stop() {
		t.Fatal("the listener accepted a connection")
	}
}

func TestClientAllowsWhatPolicyAllows(t *testing.T) {
	srv, hits := countingServer(t, nil)
	u, _ := url.Parse(srv.URL)
	tests := []struct {
		name string
		pol  Policy
		url  string
	}{
		{"allowed address", Policy{AllowHosts: []string{"127.0.0.1"}}, srv.URL},
		{"allowed cidr", Policy{AllowHosts: []string{"127.0.0.0/8"}}, srv.URL},
		{"allowed name", Policy{AllowHosts: []string{"rebind.test"}}, "http://rebind.test:" + u.Port() + "/"},
		{"allowed wildcard", Policy{AllowHosts: []string{"*.test"}}, "http://rebind.test:" + u.Port() + "/"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := NewClient(tt.pol, ClientOptions{Resolver: mapResolver{"rebind.test": {loop}}})
			resp, err := client.Get(tt.url)
			if err != nil {
				t.Fatalf("GET %s: %v", tt.url, err)
			}
			body, truncated, err := ReadCapped(resp.Body, 100)
			resp.Body.Close()
			if err != nil || truncated || string(body) != "hello" {
				t.Fatalf("body = %q, %v, %v", body, truncated, err)
			}
			if got := hits.Load(); got != int64(i+1) {
				t.Fatalf("server saw %d requests, want %d", got, i+1)
			}
		})
	}
}

func TestClientIgnoresEnvironmentProxy(t *testing.T) {
	proxy, proxyHits := countingServer(t, nil)
	target, targetHits := countingServer(t, nil)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")
	u, _ := url.Parse(target.URL)
	client := NewClient(Policy{AllowHosts: []string{"direct.test"}}, ClientOptions{Resolver: mapResolver{"direct.test": {loop}}})
	resp, err := client.Get("http://direct.test:" + u.Port() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if proxyHits.Load() != 0 || targetHits.Load() != 1 {
		t.Fatalf("proxy saw %d, target saw %d; want 0 and 1", proxyHits.Load(), targetHits.Load())
	}
}

func TestClientRedirects(t *testing.T) {
	refusedTarget, refusedHits := countingServer(t, nil)
	var redirector *httptest.Server
	redirector, _ = countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-loopback":
			http.Redirect(w, r, refusedTarget.URL+"/secret", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			_, _ = io.WriteString(w, "end")
		}
	})
	u, _ := url.Parse(redirector.URL)
	base := "http://allowed.test:" + u.Port()
	client := NewClient(Policy{AllowHosts: []string{"allowed.test"}},
		ClientOptions{Resolver: mapResolver{"allowed.test": {loop}}})

	t.Run("redirect to a refused address", func(t *testing.T) {
		_, err := client.Get(base + "/to-loopback")
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("GET = %v, want ErrRefused", err)
		}
		if n := refusedHits.Load(); n != 0 {
			t.Fatalf("refused server saw %d requests", n)
		}
	})
	t.Run("redirect to another scheme", func(t *testing.T) {
		if _, err := client.Get(base + "/to-file"); !errors.Is(err, ErrScheme) {
			t.Fatalf("GET = %v, want ErrScheme", err)
		}
	})
	t.Run("redirect loop stops after five", func(t *testing.T) {
		if _, err := client.Get(base + "/loop"); !errors.Is(err, ErrTooManyRedirects) {
			t.Fatalf("GET = %v, want ErrTooManyRedirects", err)
		}
	})
}

func TestCheckRedirect(t *testing.T) {
	req := func(raw string) *http.Request {
		r, err := http.NewRequest(http.MethodGet, raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	vias := func(n int) []*http.Request {
		out := make([]*http.Request, n)
		for i := range out {
			out[i] = req(fmt.Sprintf("https://example.com/%d", i))
		}
		return out
	}
	tests := []struct {
		name string
		opts ClientOptions
		pol  Policy
		to   string
		via  int
		want error
	}{
		{"public first redirect", ClientOptions{}, Policy{}, "https://example.org/", 1, nil},
		{"fifth redirect", ClientOptions{}, Policy{}, "https://example.org/", 5, nil},
		{"sixth redirect", ClientOptions{}, Policy{}, "https://example.org/", 6, ErrTooManyRedirects},
		{"cap cannot be raised", ClientOptions{MaxRedirects: 50}, Policy{}, "https://example.org/", 6, ErrTooManyRedirects},
		{"lower cap", ClientOptions{MaxRedirects: 2}, Policy{}, "https://example.org/", 3, ErrTooManyRedirects},
		{"no redirects", ClientOptions{MaxRedirects: -1}, Policy{}, "https://example.org/", 1, ErrTooManyRedirects},
		{"to loopback", ClientOptions{}, Policy{}, "http://127.0.0.1/", 1, ErrRefused},
		{"to hex metadata", ClientOptions{}, Policy{}, "http://0xa9fea9fe/latest/", 1, ErrRefused},
		{"to ipv6 ula", ClientOptions{}, Policy{}, "http://[fd00::1]/", 1, ErrRefused},
		{"to localhost", ClientOptions{}, Policy{}, "http://localhost/", 1, ErrRefused},
		{"to ftp", ClientOptions{}, Policy{}, "ftp://example.org/", 1, ErrScheme},
		{"to userinfo", ClientOptions{}, Policy{}, "http://a@example.org/", 1, ErrUserinfo},
		{"to allowed private", ClientOptions{}, Policy{AllowHosts: []string{"10.0.0.0/8"}}, "http://10.9.9.9/", 1, nil},
		{"bad policy", ClientOptions{}, Policy{AllowHosts: []string{"?"}}, "https://example.org/", 1, ErrPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewClient(tt.pol, tt.opts)
			err := c.CheckRedirect(req(tt.to), vias(tt.via))
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("CheckRedirect(%s, %d via) = %v, want %v", tt.to, tt.via, err, tt.want)
			}
		})
	}
}

func TestClientBadPolicyFailsClosed(t *testing.T) {
	srv, hits := countingServer(t, nil)
	client := NewClient(Policy{AllowHosts: []string{"127.0.0.0/99"}}, ClientOptions{})
	if _, err := client.Get(srv.URL); !errors.Is(err, ErrPolicy) {
		t.Fatalf("GET = %v, want ErrPolicy", err)
	}
	if hits.Load() != 0 {
		t.Fatal("server was reached")
	}
}

func TestClientBodyCap(t *testing.T) {
	const big = 2 << 20
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(bytes.Repeat([]byte("a"), big))
	})
	client := NewClient(Policy{AllowHosts: []string{"127.0.0.1"}}, ClientOptions{})
	t.Run("ReadCapped truncates at the default cap", func(t *testing.T) {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, truncated, err := ReadCapped(resp.Body, DefaultMaxBodyBytes)
		if err != nil || !truncated || len(b) != DefaultMaxBodyBytes {
			t.Fatalf("ReadCapped = %d bytes, truncated %v, %v", len(b), truncated, err)
		}
	})
	t.Run("reading past the cap fails", func(t *testing.T) {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if !errors.Is(err, ErrBodyTooLarge) || len(b) != DefaultMaxBodyBytes {
			t.Fatalf("ReadAll = %d bytes, %v; want %d and ErrBodyTooLarge", len(b), err, DefaultMaxBodyBytes)
		}
	})
	t.Run("smaller configured cap", func(t *testing.T) {
		c := NewClient(Policy{AllowHosts: []string{"127.0.0.1"}}, ClientOptions{MaxBodyBytes: 10})
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, truncated, err := ReadCapped(resp.Body, 1000)
		if err != nil || !truncated || len(b) != 10 {
			t.Fatalf("ReadCapped = %d bytes, truncated %v, %v", len(b), truncated, err)
		}
	})
}

func TestReadCapped(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		r         io.Reader
		n         int64
		want      string
		truncated bool
		err       error
	}{
		{"shorter", strings.NewReader("abc"), 5, "abc", false, nil},
		{"exact", strings.NewReader("abcde"), 5, "abcde", false, nil},
		{"longer", strings.NewReader("abcdef"), 5, "abcde", true, nil},
		{"zero cap", strings.NewReader("a"), 0, "", true, nil},
		{"zero cap empty", strings.NewReader(""), 0, "", false, nil},
		{"read error", io.MultiReader(strings.NewReader("ab"), iotestErr{boom}), 5, "ab", false, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, truncated, err := ReadCapped(tt.r, tt.n)
			if string(b) != tt.want || truncated != tt.truncated || !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("ReadCapped = %q, %v, %v; want %q, %v, %v", b, truncated, err, tt.want, tt.truncated, tt.err)
			}
		})
	}
	if _, _, err := ReadCapped(strings.NewReader("x"), -1); err == nil {
		t.Fatal("negative cap accepted")
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }
