package mcptool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/plugin"
	mcptool "github.com/overseer-dev/overseer/plugins/tool/mcp"
)

// goServer is a real MCP server (the Go SDK's) over streamable HTTP, with
// tools that show what the client sent and return every kind of content.
type goServer struct {
	url     string
	srv     *mcp.Server
	release func() // ends the slow tool's calls

	mu      sync.Mutex
	headers []http.Header // of each tools/call
}

func newGoServer(t testing.TB) *goServer {
	t.Helper()
	gs := &goServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "go-test-server", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	add := func(name, desc string, h func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error)) {
		srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Extra != nil {
				gs.mu.Lock()
				gs.headers = append(gs.headers, req.Extra.Header.Clone())
				gs.mu.Unlock()
			}
			return h(ctx, req)
		})
	}
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	add("args", "returns its arguments as JSON", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text(string(req.Params.Arguments))}, nil
	})
	add("mixed", "returns every kind of content", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "before"},
			&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)},
			&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)},
			&mcp.ResourceLink{URI: "file:///x.txt", Name: "x"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://t", MIMEType: "text/plain", Text: "embedded text"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://b", Blob: []byte{1, 2, 3}}},
			&mcp.TextContent{Text: "after"},
		}}, nil
	})
	add("fail", "always fails", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: text("it failed on purpose")}, nil
	})
	add("structured", "structured content only", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 5}}, nil
	})
	add("big", "a long answer", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text(strings.Repeat("é", 3000))}, nil
	})
	stop := make(chan struct{})
	add("slow", "answers when the call is cancelled or the test ends", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-stop:
			return nil, errors.New("the test ended")
		}
	})
	add("secret_thing", "hidden by the configuration", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("must not run")}, nil
	})
	add("run", "runs a command", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("ran")}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	var once sync.Once
	gs.release = func() { once.Do(func() { close(stop) }) }
	t.Cleanup(gs.release) // before ts.Close, which waits for handlers
	gs.url, gs.srv = ts.URL, srv
	return gs
}

// client connects a client to the server; extra is more settings of the
// server "go" (JSON, after a comma). Its calls have the default timeout:
// a test of the timeout sets a short one in extra, since every call, not
// only the slow one, would have to answer within it, which a loaded
// machine does not promise.
func (gs *goServer) client(t testing.TB, extra string) *mcptool.Client {
	t.Helper()
	raw := `{"max_output_bytes": 1000, "servers": {"go": {"url": ` + q(gs.url) + `,
	  "headers": {"X-Test": "from-config"},
	  "hide_tools": ["secret_*"],
	  "tools": {"run": {"kind": "shell", "arg": "cmdline"}}` + extra + `}}}`
	c, err := mcptool.New(context.Background(), parse(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	// The server ends a session only once its handlers returned.
	t.Cleanup(func() { gs.release(); _ = c.Close() })
	return c
}

func TestRegistered(t *testing.T) {
	inst, err := plugin.New(mcptool.ID, json.RawMessage(`{"servers": {"x": {"command": "true"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := inst.(*mcptool.Client)
	if !ok {
		t.Fatalf("got %T", inst)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := plugin.New(mcptool.ID, json.RawMessage(`{"servers": {"x": {"command": "true", "comand": "typo"}}}`)); !errors.Is(err, mcptool.ErrConfig) {
		t.Fatalf("an unknown field: want ErrConfig, got %v", err)
	}
}

func TestHTTPServerListing(t *testing.T) {
	gs := newGoServer(t)
	c := gs.client(t, "")
	specs, err := c.Tools(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name+":"+s.Kind)
	}
	got := strings.Join(names, " ")
	want := "go__args:mcp go__big:mcp go__fail:mcp go__mixed:mcp go__run:shell go__slow:mcp go__structured:mcp"
	if got != want {
		t.Fatalf("tools\n got %s\nwant %s", got, want)
	}
	if m, ok := c.Mapping("go__run"); !ok || m.Kind != "shell" || m.Arg != "cmdline" {
		t.Errorf("Mapping(go__run) = %+v %v", m, ok)
	}
	if _, ok := c.Mapping("go__args"); ok {
		t.Error("Mapping(go__args): want none")
	}
	// Listing again does not ask the server again and gives the same.
	again, err := c.Tools(ctxT(t))
	if err != nil || len(again) != len(specs) {
		t.Fatalf("second listing: %v %d", err, len(again))
	}
}

func TestHTTPServerExecute(t *testing.T) {
	gs := newGoServer(t)
	c := gs.client(t, "")
	// The slow tool never answers: a short timeout ends its call.
	short := gs.client(t, `, "call_timeout": "200ms"`)
	nested := map[string]any{"cmdline": "ls -l", "n": 3.5, "list": []any{"a", map[string]any{"b": true}}, "nil": nil}
	cases := []struct {
		name      string
		tool      string
		args      map[string]any
		want      []string // substrings of Output, in order
		notWant   string
		isError   bool
		err       error
		truncated bool
	}{
		{name: "arguments pass unchanged", tool: "go__run", args: nested, want: []string{"ran"}},
		{name: "arguments arrive as written", tool: "go__args", args: nested,
			want: []string{`"cmdline":"ls -l"`, `"list":["a",{"b":true}]`, `"n":3.5`, `"nil":null`}},
		{name: "nil arguments are an empty object", tool: "go__args", want: []string{"{}"}},
		{name: "every kind of content", tool: "go__mixed", want: []string{
			"before", "[image image/png, 1234 bytes]", "[audio audio/wav, 10 bytes]", "[resource link file:///x.txt (x)]",
			"[resource mem://t, text/plain]\nembedded text", "[resource mem://b, unknown type, 3 bytes]", "after"}},
		{name: "an error result", tool: "go__fail", want: []string{"it failed on purpose"}, isError: true},
		{name: "structured content only", tool: "go__structured", want: []string{`{"sum":5}`}},
		{name: "a long output is cut", tool: "go__big", want: []string{"éé", "[output truncated: 1000 of 6000 bytes shown]"}, truncated: true},
		{name: "a call past its timeout", tool: "go__slow", err: mcptool.ErrTimeout},
		{name: "a hidden tool", tool: "go__secret_thing", err: mcptool.ErrUnknownTool},
		{name: "an unknown tool", tool: "go__nope", err: mcptool.ErrUnknownTool},
		{name: "an empty tool name", tool: "go__", err: mcptool.ErrUnknownTool},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := json.Marshal(tc.args)
			cl := c
			if tc.err == mcptool.ErrTimeout {
				cl = short
			}
			res, err := cl.Execute(ctxT(t), plugin.Call{Tool: tc.tool, Args: tc.args})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("want %v, got %v (%+v)", tc.err, err, res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := json.Marshal(tc.args); !bytes.Equal(before, after) {
				t.Errorf("the arguments were changed: %s -> %s", before, after)
			}
			rest := res.Output
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order)\n%s", w, res.Output)
				}
				rest = rest[i+len(w):]
			}
			if res.IsError != tc.isError {
				t.Errorf("IsError %v, want %v", res.IsError, tc.isError)
			}
			if got := res.Meta[mcptool.MetaTruncated] == true; got != tc.truncated {
				t.Errorf("truncated %v, want %v", got, tc.truncated)
			}
			if res.Meta[mcptool.MetaServer] != "go" {
				t.Errorf("meta %v", res.Meta)
			}
		})
	}
	t.Run("headers are sent", func(t *testing.T) {
		gs.mu.Lock()
		defer gs.mu.Unlock()
		if len(gs.headers) == 0 {
			t.Fatal("no call was seen")
		}
		for _, h := range gs.headers {
			if h.Get("X-Test") != "from-config" {
				t.Fatalf("header X-Test = %q", h.Get("X-Test"))
			}
		}
	})
	t.Run("the caller's context ends a call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Execute(ctx, plugin.Call{Tool: "go__args"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %v", err)
		}
	})
}

// TestUnreachableServers covers servers that cannot start: every path is
// an error naming the server, never a result.
func TestUnreachableServers(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	cases := []struct {
		name   string
		server string
		want   string
	}{
		{"missing command", `{"command": "/nonexistent/mcp-server"}`, "/nonexistent/mcp-server"},
		{"exits at once", `{"command": "sh", "args": ["-c", "echo it-went-boom >&2; exit 3"]}`, "it-went-boom"},
		{"speaks no MCP", `{"command": "sh", "args": ["-c", "echo not json; cat >/dev/null"]}`, "bad"},
		{"refused connection", `{"url": "http://127.0.0.1:1/mcp"}`, "bad"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := mcptool.New(ctxT(t), parse(t, `{"servers": {"bad": `+tc.server+`}}`))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			specs, err := c.Tools(ctxT(t))
			if !errors.Is(err, mcptool.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) || specs != nil {
				t.Fatalf("Tools: want ErrUnavailable mentioning %q, got %v %v", tc.want, specs, err)
			}
			res, err := c.Execute(ctxT(t), plugin.Call{Tool: "bad__x"})
			if !errors.Is(err, mcptool.ErrUnavailable) {
				t.Fatalf("Execute: want ErrUnavailable, got %v %+v", err, res)
			}
		})
	}
}

func TestClosedClient(t *testing.T) {
	gs := newGoServer(t)
	c := gs.client(t, "")
	if _, err := c.Tools(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute(ctxT(t), plugin.Call{Tool: "go__args"}); !errors.Is(err, mcptool.ErrClosed) {
		t.Fatalf("want ErrClosed, got %v", err)
	}
}

func TestNewChecks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := mcptool.New(ctx, mcptool.Config{Servers: map[string]*mcptool.ServerConfig{"a": {Command: "x"}}}); !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
	if _, err := mcptool.New(context.Background(), mcptool.Config{}); !errors.Is(err, mcptool.ErrConfig) {
		t.Errorf("no servers: %v", err)
	}
}

// TestToolListChanged adds a tool to a running server: the next listing
// after the server's notification offers it.
func TestToolListChanged(t *testing.T) {
	gs := newGoServer(t)
	c := gs.client(t, "")
	if _, err := c.Tools(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	gs.srv.AddTool(&mcp.Tool{Name: "late", Description: "added later", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late answer"}}}, nil
		})
	deadline := time.Now().Add(10 * time.Second)
	for {
		specs, err := c.Tools(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(specs, func(s plugin.ToolSpec) bool { return s.Name == "go__late" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("go__late was never listed")
		}
		time.Sleep(10 * time.Millisecond) // the notification is asynchronous
	}
	res, err := c.Execute(ctxT(t), plugin.Call{Tool: "go__late"})
	if err != nil || res.Output != "late answer" {
		t.Fatalf("%v %+v", err, res)
	}
}
