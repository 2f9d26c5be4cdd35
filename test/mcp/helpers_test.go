package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// setup is a home with mcp.yaml in front of the filesystem server (on
// data) and the everything server, and a working directory apart from
// data, so that writes there wait for a person.
type setup struct {
	home, data, cwd, npm string
}

func newSetup(t *testing.T, hold string) *setup {
	t.Helper()
	s := &setup{home: t.TempDir(), data: t.TempDir(), cwd: t.TempDir(), npm: overseertest.MCPPeers(t, "server-filesystem", "server-everything", "sdk")}
	mod := filepath.Join(s.npm, "node_modules", "@modelcontextprotocol")
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	cfg := "hold: " + hold + "\n" +
		"servers:\n" +
		"  fs:\n" +
		"    command: node\n" +
		"    args: [" + q(filepath.Join(mod, "server-filesystem", "dist", "index.js")) + ", " + q(s.data) + "]\n" +
		"    tools:\n" +
		"      write_file: {kind: file_write, arg: path}\n" +
		"      edit_file: {kind: file_edit, arg: path}\n" +
		"      read_text_file: {kind: file_read, arg: path}\n" +
		"    hide_tools: [move_file]\n" +
		"  every:\n" +
		"    command: node\n" +
		"    args: [" + q(filepath.Join(mod, "server-everything", "dist", "index.js")) + ", stdio]\n" +
		"    restart: {initial: 200ms, max: 1s}\n"
	if err := os.WriteFile(filepath.Join(s.home, "mcp.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The data directory may be read without asking; writing there (outside
	// the working directory) waits for a person.
	// get-sum runs unasked even where the daemon's guards lack the mcp
	// guard (which reads the tools' annotations).
	pol := "version: 1\nsettings:\n  sandbox:\n    readable_paths: [" + q(s.data) + "]\n" +
		"rules:\n  - {name: sums, tool: every__get-sum, level: auto}\n"
	if err := os.WriteFile(filepath.Join(s.home, "policy.yaml"), []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.data, "hello.txt"), []byte("hello from the data dir\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// gatewayCmd is `overseer mcp` on the setup's home, as a client launches it.
func (s *setup) gatewayCmd(t *testing.T) *exec.Cmd {
	cmd := exec.Command(overseertest.Binary(t), "--home", s.home, "mcp")
	cmd.Dir = s.cwd
	cmd.Env = append(os.Environ(), "OVERSEER_HOME="+s.home)
	cmd.Stderr = &logWriter{t: t}
	return cmd
}

// gatewaySession is one session of `overseer mcp` on home, its standard
// error in the test's log.
func gatewaySession(t *testing.T, home string) *mcp.ClientSession {
	t.Helper()
	cmd := overseertest.MCPGateway(t, home)
	cmd.Stderr = &logWriter{t: t}
	return overseertest.MCPConnect(t, cmd, nil)
}

type logWriter struct{ t *testing.T }

func (w *logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// approvals lists pending approvals through the CLI.
func (s *setup) approvals(t *testing.T) []map[string]any {
	t.Helper()
	r := overseertest.Run(t, s.home, "", "approvals", "--json")
	if r.Code != 0 {
		t.Fatalf("overseer approvals: %d %s", r.Code, r.Stderr)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("approvals output: %v\n%s", err, r.Stdout)
	}
	return list
}

// waitApproval waits for one pending approval of tool and returns its id.
func (s *setup) waitApproval(t *testing.T, tool string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, a := range s.approvals(t) {
			if a["tool"] == tool {
				return a["id"].(string)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no approval for %s", tool)
	return ""
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// killUpstream kills the gateway's child process whose command line
// contains marker.
func killUpstream(t *testing.T, gatewayPID int, marker string) {
	t.Helper()
	for _, p := range overseertest.Procs() {
		if p.PPID == gatewayPID && strings.Contains(p.Cmdline, marker) {
			if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no upstream process with %q under %d", marker, gatewayPID)
}
