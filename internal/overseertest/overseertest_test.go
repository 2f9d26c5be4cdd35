package overseertest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// recorder is a testing.TB that records how a helper ended the test.
type recorder struct {
	testing.TB
	ended string // "fatal: …", "skip: …" or ""
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.ended = "fatal: " + fmt.Sprint(args...); runtime.Goexit() }

func (r *recorder) Fatalf(f string, args ...any) {
	r.ended = "fatal: " + fmt.Sprintf(f, args...)
	runtime.Goexit()
}

func (r *recorder) Skip(args ...any) { r.ended = "skip: " + fmt.Sprint(args...); runtime.Goexit() }

// peers runs MCPPeers as a test of its own would, and returns its result
// and how it ended the test.
func peers(t *testing.T, packages ...string) (dir, ended string) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		dir = overseertest.MCPPeers(r, packages...)
	}()
	<-done
	return dir, r.ended
}

func TestMCPPeers(t *testing.T) {
	installed := t.TempDir()
	for _, p := range []string{"server-filesystem", "sdk"} {
		d := filepath.Join(installed, "node_modules", "@modelcontextprotocol", p)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "package.json"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	nodeDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(nodeDir, "node"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		dir, ci   string
		noNode    bool
		packages  []string
		wantEnded string // prefix; "" when it returns
	}{
		{"installed", installed, "", false, []string{"server-filesystem", "sdk"}, ""},
		{"no package asked: node only", installed, "", false, nil, ""},
		{"a package missing is skipped loudly", installed, "", false, []string{"server-filesystem", "server-everything"},
			"skip: SKIPPED: the MCP test peers (node, @modelcontextprotocol/server-everything) are not installed; run scripts/install-mcp-servers.sh"},
		{"a package missing in CI fails", installed, "true", false, []string{"server-everything"},
			"fatal: the MCP test peers (node, @modelcontextprotocol/server-everything) are not installed"},
		{"no node is skipped", installed, "", true, []string{"sdk"}, "skip: SKIPPED: the MCP test peers (node, @modelcontextprotocol/sdk)"},
		{"no node, no package", installed, "", true, nil, "skip: SKIPPED: the MCP test peers (node) are not installed"},
		{"no node in CI fails", installed, "true", true, nil, "fatal: the MCP test peers (node)"},
		{"CI other than true skips", installed, "1", false, []string{"nope"}, "skip: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("MCP_SERVERS_DIR", tc.dir)
			t.Setenv("CI", tc.ci)
			if tc.noNode {
				t.Setenv("PATH", t.TempDir())
			} else {
				t.Setenv("PATH", nodeDir)
			}
			dir, ended := peers(t, tc.packages...)
			switch {
			case tc.wantEnded == "" && (ended != "" || dir != tc.dir):
				t.Fatalf("ended %q, dir %q; want %q returned", ended, dir, tc.dir)
			case tc.wantEnded != "" && !strings.HasPrefix(ended, tc.wantEnded):
				t.Fatalf("ended %q, want %q…", ended, tc.wantEnded)
			}
		})
	}
	t.Run("default: .cache/npm-mcp at the module's root", func(t *testing.T) {
		t.Setenv("MCP_SERVERS_DIR", "")
		t.Setenv("PATH", nodeDir)
		t.Setenv("CI", "")
		dir, ended := peers(t)
		wd, _ := os.Getwd()
		want := filepath.Join(filepath.Dir(filepath.Dir(wd)), ".cache", "npm-mcp")
		if ended != "" || dir != want {
			t.Fatalf("ended %q, dir %q; want %q", ended, dir, want)
		}
	})
}

func TestProcs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	byPID := map[int]overseertest.Proc{}
	for _, p := range overseertest.Procs() {
		byPID[p.PID] = p
	}
	self, child := byPID[os.Getpid()], byPID[cmd.Process.Pid]
	checks := []struct {
		name string
		ok   bool
	}{
		{"this process is listed", self.PID == os.Getpid() && self.PPID == os.Getppid() && self.State != ""},
		{"its group", self.PGID == syscall.Getpgrp()},
		{"its command line", strings.HasPrefix(self.Cmdline, os.Args[0])},
		{"the child's parent", child.PPID == os.Getpid()},
		{"the child's command line, arguments joined by spaces", child.Cmdline == "sleep 30"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !c.ok {
				t.Fatalf("self %+v, child %+v", self, child)
			}
		})
	}
}
