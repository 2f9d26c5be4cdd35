package mcptool_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
	mcptool "github.com/overseer-dev/overseer/plugins/tool/mcp"
)

// peers returns the node_modules/@modelcontextprotocol directory of the
// npm servers the tests use, skipping (or, in CI, failing) the test when
// they or node are not installed.
func peers(t testing.TB) string {
	t.Helper()
	dir := overseertest.MCPPeers(t, "server-filesystem", "server-everything")
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol")
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
type proc = overseertest.Proc

// living returns the processes (not zombies) that match.
func living(match func(proc) bool) []proc {
	var out []proc
	for _, p := range overseertest.Procs() {
		if p.State != "Z" && match(p) {
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
