package overseertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPGateway is `overseer mcp` (the real binary, built first) on home, as
// an agent's MCP client launches it. Set its Dir or Stderr before
// MCPConnect starts it.
func MCPGateway(t testing.TB, home string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(Binary(t), "--home", home, "mcp")
	cmd.Env = append(os.Environ(), "OVERSEER_HOME="+home)
	return cmd
}

// MCPConnect starts cmd (an MCPGateway) and connects an MCP client to it
// over stdio, with opts (nil for none); the session is closed when the
// test ends, if it was not before.
func MCPConnect(t testing.TB, cmd *exec.Cmd, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// MCPTools lists the names of the tools a session offers.
func MCPTools(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}
