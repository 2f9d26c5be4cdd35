package mcptool

import (
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/mcpshared"
	"github.com/overseer-dev/overseer/plugin"
)

// Meta keys of a Result.
const (
	MetaServer     = "server"             // the server's name
	MetaTool       = "tool"               // the tool's own name
	MetaStructured = "structured_content" // the result's structured content, when it has one
	MetaTruncated  = "truncated"          // true when Output was cut
)

// convert turns a tool result into the plugin's: text content joined,
// other content summarised, Output cut at maxOut bytes.
func convert(res *mcp.CallToolResult, server, tool string, maxOut int) plugin.Result {
	out := Text(res)
	r := plugin.Result{IsError: res.IsError, Meta: map[string]any{MetaServer: server, MetaTool: tool}}
	if res.StructuredContent != nil {
		r.Meta[MetaStructured] = res.StructuredContent
	}
	if maxOut > 0 && len(out) > maxOut {
		cut := maxOut
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut] + fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", cut, len(out))
		r.Meta[MetaTruncated] = true
	}
	r.Output = out
	return r
}

// Text is a tool result as text: each text content as it is, other content
// summarised in brackets ("[image image/png, 1234 bytes]"), one per line;
// the structured content as JSON when there is no other content.
func Text(res *mcp.CallToolResult) string { return mcpshared.Text(res) }
