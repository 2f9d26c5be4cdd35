package mcpshared_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/mcpshared"
)

// envServe, set in the test binary's environment, makes it serve the test
// server over stdio instead of running the tests.
const envServe = "OVERSEER_MCPSHARED_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(envServe) != "" {
		fmt.Fprintln(os.Stderr, "first line")
		fmt.Fprint(os.Stderr, "second ")
		fmt.Fprintln(os.Stderr, "line")
		if err := newServer(nil).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// newServer is a real MCP server with a tool "where" that answers with its
// working directory and the environment variables it was asked about,
// and records the headers of each call (over HTTP) with seen.
func newServer(seen func(http.Header)) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpshared-test", Version: "1"}, nil)
	type in struct {
		Vars []string `json:"vars"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "where", Description: "working directory and variables"},
		func(_ context.Context, req *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			if seen != nil && req.Extra != nil {
				seen(req.Extra.Header.Clone())
			}
			wd, _ := os.Getwd()
			out := []string{wd}
			for _, v := range in.Vars {
				out = append(out, v+"="+os.Getenv(v))
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(out, "\n")}}}, nil, nil
		})
	return s
}

func connect(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpshared.ConnectTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "overseer-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: mcpshared.ProtocolVersion})
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func where(t *testing.T, cs *mcp.ClientSession, vars ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpshared.ConnectTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "where", Arguments: map[string]any{"vars": vars}})
	if err != nil || res.IsError {
		t.Fatalf("calling where: %v %+v", err, res)
	}
	return mcpshared.Text(res)
}

// TestStdioTransport starts the test binary as a real stdio server: it
// runs in the configured directory, sees the configured variables on top
// of this process's, and its stderr reaches the Stderr, line by line.
func TestStdioTransport(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Setenv("MCPSHARED_INHERITED", "kept")
	var mu sync.Mutex
	var lines []string
	stderr := mcpshared.NewStderr(func(l []byte) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, string(l))
	})
	s := &mcpshared.Server{Command: exe, Cwd: dir, Env: map[string]string{envServe: "1", "MCPSHARED_ADDED": "v1"}}
	tr, cmd := mcpshared.Transport(s, mcpshared.TransportOptions{Stderr: stderr, ProcessGroup: true})
	if cmd == nil {
		t.Fatal("no command for a stdio server")
	}
	cs := connect(t, tr)
	got := where(t, cs, "MCPSHARED_ADDED", "MCPSHARED_INHERITED")
	real, _ := filepath.EvalSymlinks(dir)
	for _, want := range []string{"MCPSHARED_ADDED=v1", "MCPSHARED_INHERITED=kept"} {
		if !strings.Contains(got, want) {
			t.Errorf("the server saw %q, want %q in it", got, want)
		}
	}
	if wd := strings.SplitN(got, "\n", 2)[0]; wd != dir && wd != real {
		t.Errorf("the server ran in %q, want %q", wd, dir)
	}
	if err := cs.Close(); err != nil {
		t.Logf("closing: %v", err) // a stopped process may report its signal
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(lines, []string{"first line", "second line"}) {
		t.Errorf("stderr lines %q", lines)
	}
	if tail := stderr.Tail(); tail != "first line second line" {
		t.Errorf("tail %q", tail)
	}
}

// TestTransportCommand checks how the command of a stdio server is built.
func TestTransportCommand(t *testing.T) {
	s := &mcpshared.Server{Command: "srv", Args: []string{"-a", "b"}, Cwd: "/tmp",
		Env: map[string]string{"Z": "1", "A": "2"}}
	_, cmd := mcpshared.Transport(s, mcpshared.TransportOptions{})
	checks := []struct {
		name string
		ok   bool
	}{
		{"arguments", slices.Equal(cmd.Args, []string{"srv", "-a", "b"})},
		{"directory", cmd.Dir == "/tmp"},
		{"the added variables come last, sorted", len(cmd.Env) >= 2 &&
			slices.Equal(cmd.Env[len(cmd.Env)-2:], []string{"A=2", "Z=1"})},
		{"the environment is inherited", len(cmd.Env) == len(os.Environ())+2},
		{"stderr discarded by default", cmd.Stderr == nil},
		{"a wait delay", cmd.WaitDelay > 0},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !c.ok {
				t.Fatalf("command %+v", cmd)
			}
		})
	}
	t.Run("no env: this process's environment", func(t *testing.T) {
		_, cmd := mcpshared.Transport(&mcpshared.Server{Command: "srv"}, mcpshared.TransportOptions{})
		if cmd.Env != nil {
			t.Fatalf("env %q", cmd.Env)
		}
	})
}

// TestHTTPTransport reaches a real streamable HTTP server: the configured
// headers are sent with every request, and a URL server has no command.
func TestHTTPTransport(t *testing.T) {
	var mu sync.Mutex
	var headers []http.Header
	srv := newServer(func(h http.Header) { mu.Lock(); headers = append(headers, h); mu.Unlock() })
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	s := &mcpshared.Server{URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer t0k", "X-Extra": "1"}}
	tr, cmd := mcpshared.Transport(s, mcpshared.TransportOptions{ProcessGroup: true})
	if cmd != nil {
		t.Fatalf("a command for a URL server: %v", cmd)
	}
	cs := connect(t, tr)
	where(t, cs)
	where(t, cs)
	mu.Lock()
	defer mu.Unlock()
	if len(headers) != 2 {
		t.Fatalf("%d calls seen", len(headers))
	}
	for i, h := range headers {
		if h.Get("Authorization") != "Bearer t0k" || h.Get("X-Extra") != "1" {
			t.Errorf("call %d headers %v", i, h)
		}
	}
}

func TestStderr(t *testing.T) {
	t.Run("lines across writes", func(t *testing.T) {
		var lines []string
		w := mcpshared.NewStderr(func(l []byte) { lines = append(lines, string(l)) })
		for _, p := range []string{"a", "b\nc\n", "", "d\ne"} {
			if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", p, n, err)
			}
		}
		if !slices.Equal(lines, []string{"ab", "c", "d"}) {
			t.Fatalf("lines %q", lines)
		}
		if w.Tail() != "ab c d e" {
			t.Fatalf("tail %q", w.Tail())
		}
	})
	t.Run("the tail keeps the last bytes", func(t *testing.T) {
		w := mcpshared.NewStderr(nil)
		_, _ = w.Write([]byte(strings.Repeat("x", mcpshared.StderrTail) + " end"))
		tail := w.Tail()
		if !strings.HasSuffix(tail, " end") || len(tail) != mcpshared.StderrTail {
			t.Fatalf("tail of %d bytes ending %q", len(tail), tail[len(tail)-8:])
		}
	})
	t.Run("a line without end is handed on", func(t *testing.T) {
		var got []int
		w := mcpshared.NewStderr(func(l []byte) { got = append(got, len(l)) })
		_, _ = w.Write(make([]byte, 65<<10))
		if len(got) != 1 || got[0] != 65<<10 {
			t.Fatalf("lines of %v bytes", got)
		}
	})
	t.Run("invalid UTF-8 is dropped from the tail", func(t *testing.T) {
		w := mcpshared.NewStderr(nil)
		_, _ = w.Write([]byte("a\xffb\n"))
		if w.Tail() != "ab" {
			t.Fatalf("tail %q", w.Tail())
		}
	})
	t.Run("nil", func(t *testing.T) {
		var w *mcpshared.Stderr
		if w.Tail() != "" {
			t.Fatal("a nil Stderr has a tail")
		}
	})
}
