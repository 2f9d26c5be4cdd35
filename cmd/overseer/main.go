// Command overseer is a human-decision firewall for AI agents.
package main

import (
	"context"
	"os"

	"github.com/overseer-dev/overseer/internal/frontend/cli"

	// The standard plugin set registers itself.
	_ "github.com/overseer-dev/overseer/plugins/context/standard"
	_ "github.com/overseer-dev/overseer/plugins/llm/anthropic"
	_ "github.com/overseer-dev/overseer/plugins/llm/openai"
	_ "github.com/overseer-dev/overseer/plugins/llm/router"
	_ "github.com/overseer-dev/overseer/plugins/memory/sqlite"
	_ "github.com/overseer-dev/overseer/plugins/plan/llmplan"
	_ "github.com/overseer-dev/overseer/plugins/tool/builtin"
	_ "github.com/overseer-dev/overseer/plugins/tool/mcp"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
