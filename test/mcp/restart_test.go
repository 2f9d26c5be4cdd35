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

func connect(t *testing.T, cmd *exec.Cmd) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "restart-e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// approvalOf is the approval id in a result's _meta.
func approvalOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	m, _ := res.Meta["overseer"].(map[string]any)
	id, _ := m["approval_id"].(string)
	if id == "" {
		t.Fatalf("no approval in the result: %s %v", text(res), res.Meta)
	}
	return id
}

// statusOf reads an approval's status through the CLI.
func (s *setup) statusOf(t *testing.T, id string) string {
	t.Helper()
	st, _ := s.find(t, id)["status"].(string)
	return st
}

func (s *setup) find(t *testing.T, id string) map[string]any {
	t.Helper()
	for _, a := range s.all(t) {
		if a["id"] == id {
			return a
		}
	}
	return nil
}

// reasonOf is the reason of an approval's answer.
func (s *setup) reasonOf(t *testing.T, id string) string {
	t.Helper()
	ans, _ := s.find(t, id)["answer"].(map[string]any)
	r, _ := ans["reason"].(string)
	return r
}

func (s *setup) all(t *testing.T) []map[string]any {
	t.Helper()
	r := overseertest.Run(t, s.home, "", "approvals", "--all", "--json")
	if r.Code != 0 {
		t.Fatalf("overseer approvals --all: %d %s", r.Code, r.Stderr)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("approvals output: %v\n%s", err, r.Stdout)
	}
	return list
}

// waitStatus waits until approval id has status.
func (s *setup) waitStatus(t *testing.T, id, status string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	got := ""
	for time.Now().Before(deadline) {
		if got = s.statusOf(t, id); got == status {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("approval %s is %q, not %q, after %s", id, got, status, within)
}

// TestGatewayRestartKeepsHeldCall: a call the stdio gateway held is still
// answerable after the gateway crashes, and the client's identical retry,
// through the restarted gateway, picks up the person's answer instead of
// asking again. The daemon runs meanwhile: it keeps the request, because
// the client (this test) still runs.
func TestGatewayRestartKeepsHeldCall(t *testing.T) {
	s := newSetup(t, "3s")
	overseertest.StartDaemon(t, s.home)

	t.Run("approved while no gateway runs", func(t *testing.T) {
		path := filepath.Join(s.data, "after-restart.txt")
		args := map[string]any{"path": path, "content": "once"}
		cmd := s.gatewayCmd(t)
		cs := connect(t, cmd)
		res := call(t, cs, "fs__write_file", args)
		if !res.IsError || !strings.Contains(text(res), "pending approval") {
			t.Fatalf("first call: %s", text(res))
		}
		id := approvalOf(t, res)
		// The gateway crashes.
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		time.Sleep(2500 * time.Millisecond) // the daemon sweeps meanwhile
		if st := s.statusOf(t, id); st != "pending" {
			t.Fatalf("after the crash the request is %q", st)
		}
		if r := overseertest.Run(t, s.home, "", "approve", id, "--reason", "fine"); r.Code != 0 {
			t.Fatalf("approve: %d %s", r.Code, r.Stderr)
		}
		cs2 := connect(t, s.gatewayCmd(t))
		res = call(t, cs2, "fs__write_file", args)
		if res.IsError {
			t.Fatalf("the retry after the restart: %s", text(res))
		}
		if got := approvalOf(t, res); got != id {
			t.Fatalf("the retry ran on approval %s, not %s", got, id)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != "once" {
			t.Fatalf("file %q %v", b, err)
		}
		n := 0
		for _, a := range s.all(t) {
			if a["tool"] == "fs__write_file" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d approvals for the write: the retry asked again", n)
		}
	})

	t.Run("pending across a restart, then denied", func(t *testing.T) {
		path := filepath.Join(s.data, "denied-later.txt")
		args := map[string]any{"path": path, "content": "no"}
		cs := connect(t, s.gatewayCmd(t))
		id := approvalOf(t, call(t, cs, "fs__write_file", args))
		// The client restarts the gateway the usual way: it closes its
		// input. The client still runs, so the request stays.
		cs.Close()
		cs2 := connect(t, s.gatewayCmd(t))
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			r, _ := cs2.CallTool(context.Background(), &mcp.CallToolParams{Name: "fs__write_file", Arguments: args})
			done <- r
		}()
		time.Sleep(500 * time.Millisecond) // the retry is held on the same request
		if r := overseertest.Run(t, s.home, "", "deny", id, "--reason", "keep it read-only"); r.Code != 0 {
			t.Fatalf("deny: %d %s", r.Code, r.Stderr)
		}
		res := <-done
		if res == nil || !res.IsError || !strings.Contains(text(res), "keep it read-only") || approvalOf(t, res) != id {
			t.Fatalf("the held retry: %+v", res)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatal("a denied write was written")
		}
	})

	t.Run("cancelled by the client: withdrawn", func(t *testing.T) {
		cs := connect(t, s.gatewayCmd(t))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__write_file",
				Arguments: map[string]any{"path": filepath.Join(s.data, "cancelled.txt"), "content": "x"}})
			done <- err
		}()
		id := s.waitApproval(t, "fs__write_file")
		cancel()
		<-done
		s.waitStatus(t, id, "withdrawn", 10*time.Second)
		if r := s.reasonOf(t, id); !strings.Contains(r, "cancelled the call") {
			t.Fatalf("reason %q", r)
		}
	})

	t.Run("the client exits: withdrawn", func(t *testing.T) {
		// The client is a shell that launched the gateway; killing it
		// leaves the gateway orphaned, and the daemon sees the client gone.
		cmd := exec.Command("sh", "-c", `"$0" --home "$1" mcp; :`, overseertest.Binary(t), s.home)
		cmd.Dir, cmd.Env = s.cwd, append(os.Environ(), "OVERSEER_HOME="+s.home)
		cmd.Stderr = &logWriter{t: t}
		cs := connect(t, cmd)
		id := approvalOf(t, call(t, cs, "fs__write_file", map[string]any{"path": filepath.Join(s.data, "orphan.txt"), "content": "x"}))
		if st := s.statusOf(t, id); st != "pending" {
			t.Fatalf("held call: %q", st)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		s.waitStatus(t, id, "withdrawn", 10*time.Second)
		if r := s.reasonOf(t, id); !strings.Contains(r, "MCP client (process") {
			t.Fatalf("reason %q", r)
		}
	})
}
