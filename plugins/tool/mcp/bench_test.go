package mcptool_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/overseer-dev/overseer/plugin"
	mcptool "github.com/overseer-dev/overseer/plugins/tool/mcp"
)

// BenchmarkExecuteHTTP is one call to an in-process streamable HTTP
// server: the plugin's own overhead plus the SDK's and HTTP's.
func BenchmarkExecuteHTTP(b *testing.B) {
	c := newGoServer(b).client(b, "")
	ctx := context.Background()
	args := map[string]any{"message": "ping"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Execute(ctx, plugin.Call{Tool: "go__args", Args: args}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecuteStdio is one echo call to the npm everything server
// over stdio.
func BenchmarkExecuteStdio(b *testing.B) {
	mod := peers(b)
	raw := `{"servers": {"every": {"command": "node", "args": [` +
		q(filepath.Join(mod, "server-everything", "dist", "index.js")) + `, "stdio"]}}}`
	c, err := mcptool.New(context.Background(), parse(b, raw))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if _, err := c.Tools(ctx); err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"message": "ping"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Execute(ctx, plugin.Call{Tool: "every__echo", Args: args}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTools is a listing after the first: the kernel lists before
// every call, so it must cost next to nothing.
func BenchmarkTools(b *testing.B) {
	c := newGoServer(b).client(b, "")
	ctx := context.Background()
	if _, err := c.Tools(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Tools(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
