package mcptool_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mcptool "github.com/overseer-dev/overseer/plugins/tool/mcp"
)

// peers finds the npm servers installed by scripts/install-mcp-servers.sh
// (in .cache/npm-mcp at the repository's root, or MCP_SERVERS_DIR) and
// returns their node_modules/@modelcontextprotocol directory. Without them
// (or node) the test is skipped with a loud message — or, in CI, failed.
func peers(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("MCP_SERVERS_DIR")
	if dir == "" {
		root, err := filepath.Abs(filepath.Join("..", "..", ".."))
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".cache", "npm-mcp")
	}
	_, nodeErr := exec.LookPath("node")
	mod := filepath.Join(dir, "node_modules", "@modelcontextprotocol")
	for _, p := range []string{"server-filesystem", "server-everything"} {
		if _, err := os.Stat(filepath.Join(mod, p, "package.json")); err != nil || nodeErr != nil {
			msg := "the MCP test servers (node, @modelcontextprotocol/" + p + ") are not installed; run scripts/install-mcp-servers.sh"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip("SKIPPED: " + msg)
		}
	}
	return mod
}

// parse builds a Config from JSON, failing the test on an error.
func parse(t testing.TB, raw string) mcptool.Config {
	t.Helper()
	cfg, err := mcptool.ParseConfig(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, raw)
	}
	return cfg
}

// q quotes s as a JSON string.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// proc is one process as /proc shows it.
type proc struct {
	pid, ppid, pgid int
	state           string
	cmdline         string
}

// procs lists the processes of this machine (Linux only; empty elsewhere).
func procs() []proc {
	var out []proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces.
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(st[i+1:])
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgid, _ := strconv.Atoi(f[2])
		cl, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, proc{pid: pid, ppid: ppid, pgid: pgid, state: f[0],
			cmdline: strings.ReplaceAll(string(cl), "\x00", " ")})
	}
	return out
}

// living returns the processes (not zombies) that match.
func living(match func(proc) bool) []proc {
	var out []proc
	for _, p := range procs() {
		if p.state != "Z" && match(p) {
			out = append(out, p)
		}
	}
	return out
}

// waitGone waits (a bounded time: a killed process takes a moment to go)
// until no living process matches, and fails listing those that remain.
func waitGone(t *testing.T, what string, match func(proc) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := living(match)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d process(es) left: %+v", what, len(left), left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
