package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// The whole story through `overseer mcp` over stdio, driven by the Go SDK
// client: list, read (allowed), write (held, approved through the CLI,
// written), write (denied, not written), a crashed upstream (error,
// gateway alive, restarted), and the audit chain verifies.
func TestGatewayWithGoClient(t *testing.T) {
	s := newSetup(t, "60s")
	cmd := s.gatewayCmd(t)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	t.Run("list tools", func(t *testing.T) {
		var names []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		all := strings.Join(names, " ")
		for _, want := range []string{"fs__read_text_file", "fs__write_file", "fs__list_directory", "every__echo", "every__get-sum"} {
			if !strings.Contains(" "+all+" ", " "+want+" ") {
				t.Errorf("%s not listed: %s", want, all)
			}
		}
		if strings.Contains(all, "fs__move_file") {
			t.Errorf("a hidden tool is listed: %s", all)
		}
	})

	t.Run("read a file: allowed", func(t *testing.T) {
		res := call(t, cs, "fs__read_text_file", map[string]any{"path": filepath.Join(s.data, "hello.txt")})
		if res.IsError || !strings.Contains(text(res), "hello from the data dir") {
			t.Fatalf("read: %s", text(res))
		}
	})

	t.Run("write a file: held, approved, written", func(t *testing.T) {
		path := filepath.Join(s.data, "approved.txt")
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__write_file", Arguments: map[string]any{"path": path, "content": "yes"}})
			if err != nil {
				r = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
			}
			done <- r
		}()
		id := s.waitApproval(t, "fs__write_file")
		if _, err := os.Stat(path); err == nil {
			t.Fatal("written before the answer")
		}
		if r := overseertest.Run(t, s.home, "", "approve", id); r.Code != 0 {
			t.Fatalf("overseer approve: %d %s", r.Code, r.Stderr)
		}
		res := <-done
		if res.IsError {
			t.Fatalf("approved write failed: %s", text(res))
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != "yes" {
			t.Fatalf("file %q %v", b, err)
		}
	})

	t.Run("write another: denied, not written", func(t *testing.T) {
		path := filepath.Join(s.data, "denied.txt")
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			r, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__write_file", Arguments: map[string]any{"path": path, "content": "no"}})
			done <- r
		}()
		id := s.waitApproval(t, "fs__write_file")
		if r := overseertest.Run(t, s.home, "", "deny", id, "--reason", "keep the data dir read-only"); r.Code != 0 {
			t.Fatalf("overseer deny: %d %s", r.Code, r.Stderr)
		}
		res := <-done
		if res == nil || !res.IsError || !strings.Contains(text(res), "keep the data dir read-only") {
			t.Fatalf("denied write: %+v", res)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatal("a denied write was written")
		}
	})

	t.Run("crashed upstream: error, gateway alive, restarted", func(t *testing.T) {
		killUpstream(t, cmd.Process.Pid, "server-everything")
		sawError := false
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			// Each call differs, or repeat detection would put it to a person.
			msg := fmt.Sprintf("again %d", i)
			res := call(t, cs, "every__echo", map[string]any{"message": msg})
			if res.IsError {
				sawError = true
				if !strings.Contains(text(res), "cannot be called now") && !strings.Contains(text(res), "did not complete") {
					t.Fatalf("error from a crashed upstream: %s", text(res))
				}
			} else if sawError {
				if !strings.Contains(text(res), "Echo: "+msg) {
					t.Fatalf("echo after the restart: %s", text(res))
				}
				break
			}
			if i == 0 {
				// The other upstream is untouched.
				if r := call(t, cs, "fs__list_allowed_directories", nil); r.IsError {
					t.Fatalf("the filesystem server failed with the other one: %s", text(r))
				}
			}
			time.Sleep(250 * time.Millisecond)
		}
		if !sawError {
			t.Fatal("a call to the killed server never failed")
		}
	})

	cs.Close()
	t.Run("audit chain", func(t *testing.T) {
		r := overseertest.Run(t, s.home, "", "audit", "verify")
		if r.Code != 0 {
			t.Fatalf("audit verify: %d %s %s", r.Code, r.Stdout, r.Stderr)
		}
		r = overseertest.Run(t, s.home, "", "audit", "export")
		for _, want := range []string{`"type":"mcp_upstream"`, `"tool":"fs__write_file"`, `"channel":"cli"`, `"type":"result"`} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("the audit log has no %s", want)
			}
		}
	})
}

// The daemon serves the same gateway over streamable HTTP at /mcp.
func TestDaemonServesMCPOverHTTP(t *testing.T) {
	s := newSetup(t, "1s")
	d := overseertest.StartDaemon(t, s.home)
	ctx := context.Background()
	var cs *mcp.ClientSession
	// The daemon and both node servers start on a machine that may be
	// loaded: the deadline is generous, and costs nothing when they are quick.
	deadline := time.Now().Add(90 * time.Second)
	for {
		var err error
		cs, err = mcp.NewClient(&mcp.Implementation{Name: "http-e2e", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: d.URL("/mcp")}, nil)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("connecting to /mcp: %v\n%s", err, d.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer cs.Close()
	// The daemon does not wait for its upstreams: their tools are listed
	// (and the client told) when they come up, each server on its own.
	// Both tools called below must be listed before they are called.
	want := []string{"every__get-sum", "fs__write_file"}
	for {
		listed := map[string]bool{}
		for tool, err := range cs.Tools(ctx, nil) {
			if err == nil {
				listed[tool.Name] = true
			}
		}
		missing := slices.DeleteFunc(slices.Clone(want), func(n string) bool { return listed[n] })
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v never listed\n%s", missing, d.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	res := call(t, cs, "every__get-sum", map[string]any{"a": 2, "b": 3})
	if res.IsError || !strings.Contains(text(res), "5") {
		t.Fatalf("get-sum over HTTP: %s", text(res))
	}
	res = call(t, cs, "fs__write_file", map[string]any{"path": filepath.Join(s.data, "x.txt"), "content": "x"})
	if !res.IsError || !strings.Contains(text(res), "pending approval") {
		t.Fatalf("write over HTTP: %s", text(res))
	}
}

// One end-to-end run driven by the TypeScript SDK's client (a small node
// script): list, read, a write that comes back "pending approval", the
// person approves through the CLI, the identical retry writes.
func TestGatewayWithTypeScriptClient(t *testing.T) {
	s := newSetup(t, "1s")
	script, err := filepath.Abs("testdata/client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.data, "from-ts.txt")
	cmd := exec.Command("node", script)
	cmd.Dir = s.cwd
	cmd.Env = append(os.Environ(),
		"NODE_PATH="+filepath.Join(s.npm, "node_modules"),
		"MCP_SDK_DIR="+filepath.Join(s.npm, "node_modules", "@modelcontextprotocol", "sdk"),
		"OVERSEER_BIN="+overseertest.Binary(t), "OVERSEER_HOME="+s.home,
		"READ_PATH="+filepath.Join(s.data, "hello.txt"), "WRITE_PATH="+path)
	cmd.Stderr = &logWriter{t: t}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	next := func(step string) map[string]any {
		t.Helper()
		for lines.Scan() {
			var m map[string]any
			if json.Unmarshal(lines.Bytes(), &m) != nil {
				t.Logf("client.mjs: %s", lines.Text())
				continue
			}
			if m["step"] == "error" {
				t.Fatalf("client.mjs failed: %v", m["error"])
			}
			if m["step"] != step {
				t.Fatalf("want step %s, got %v", step, m)
			}
			return m
		}
		t.Fatalf("client.mjs ended before %s: %v", step, lines.Err())
		return nil
	}
	tools := next("tools")
	if names, _ := tools["names"].([]any); len(names) < 10 {
		t.Fatalf("tools %v", tools)
	}
	if r := next("read"); !strings.Contains(r["text"].(string), "hello from the data dir") || r["isError"] == true {
		t.Fatalf("read %v", r)
	}
	w := next("write1")
	if w["isError"] != true || !strings.Contains(w["text"].(string), "pending approval") {
		t.Fatalf("first write %v", w)
	}
	id := s.waitApproval(t, "fs__write_file")
	if !strings.Contains(w["text"].(string), id) {
		t.Fatalf("the pending result does not name %s: %v", id, w["text"])
	}
	if r := overseertest.Run(t, s.home, "", "approve", id); r.Code != 0 {
		t.Fatalf("overseer approve: %d %s", r.Code, r.Stderr)
	}
	if _, err := stdin.Write([]byte("retry\n")); err != nil {
		t.Fatal(err)
	}
	if w := next("write2"); w["isError"] == true {
		t.Fatalf("retried write %v", w)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "from the TypeScript client" {
		t.Fatalf("file %q %v", b, err)
	}
	next("done")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("client.mjs: %v", err)
	}
	if r := overseertest.Run(t, s.home, "", "audit", "verify"); r.Code != 0 {
		t.Fatalf("audit verify: %s %s", r.Stdout, r.Stderr)
	}
}

func TestCheckCommand(t *testing.T) {
	s := newSetup(t, "1s")
	r := overseertest.Run(t, s.home, "", "mcp", "check", "--json")
	if r.Code != 0 {
		t.Fatalf("mcp check: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	var out struct {
		Upstreams []struct{ Name, State string }
		Tools     []string
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		t.Fatalf("mcp check --json: %v\n%s", err, r.Stdout)
	}
	if len(out.Upstreams) != 2 || out.Upstreams[0].State != "healthy" || out.Upstreams[1].State != "healthy" ||
		!strings.Contains(strings.Join(out.Tools, " "), "fs__write_file") {
		t.Fatalf("mcp check: %+v", out)
	}
}

// A broken or missing configuration is an error naming the problem; the
// daemon still starts and /mcp says what is wrong.
func TestBadConfiguration(t *testing.T) {
	home := t.TempDir()
	if r := overseertest.Run(t, home, "", "mcp"); r.Code == 0 || !strings.Contains(r.Stderr, "mcp.yaml does not exist") {
		t.Fatalf("no mcp.yaml: %d %s", r.Code, r.Stderr)
	}
	if err := os.WriteFile(filepath.Join(home, "mcp.yaml"), []byte("servers:\n  fs: {comand: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := overseertest.Run(t, home, "", "mcp", "check"); r.Code == 0 || !strings.Contains(r.Stderr, "comand") {
		t.Fatalf("bad mcp.yaml: %d %s", r.Code, r.Stderr)
	}
	d := overseertest.StartDaemon(t, home)
	code, body := d.Do(t, "POST", "/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"}, false)
	if code != 503 || !strings.Contains(string(body), "comand") {
		t.Fatalf("/mcp with a bad configuration: %d %s", code, body)
	}
}
