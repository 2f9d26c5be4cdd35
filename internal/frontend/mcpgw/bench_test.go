package mcpgw_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCall is one auto call through the gateway in process (an
// in-memory client, the test upstream over stdio, a real SQLite audit
// log): the gateway's own cost per call, without the client's process hop.
func BenchmarkCall(b *testing.B) {
	e := newEnv(b, envOpts{policy: "version: 1\nsettings:\n  loop: {same_args: 100000000, same_tool: 100000000}\n", realClock: true})
	cs := e.client(nil, "")
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"message": fmt.Sprint(i)}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
