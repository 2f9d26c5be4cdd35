package mcpshared

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Text is a tool result as text: each text content as it is, other content
// summarised in brackets ("[image image/png, 1234 bytes]"), one per line;
// the structured content as JSON when there is no other content. A nil
// result is "".
func Text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch x := c.(type) {
		case *mcp.TextContent:
			b.WriteString(x.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d bytes]", x.MIMEType, len(x.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d bytes]", x.MIMEType, len(x.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[resource link %s", x.URI)
			if x.Name != "" {
				fmt.Fprintf(&b, " (%s)", x.Name)
			}
			b.WriteString("]")
		case *mcp.EmbeddedResource:
			writeResource(&b, x.Resource)
		case nil:
		default:
			fmt.Fprintf(&b, "[%T]", c)
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		if s, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(s)
		}
	}
	return b.String()
}

// writeResource shows an embedded text resource with its text, a binary
// one summarised.
func writeResource(b *strings.Builder, r *mcp.ResourceContents) {
	if r == nil {
		b.WriteString("[resource]")
		return
	}
	mime := r.MIMEType
	if mime == "" {
		mime = "unknown type"
	}
	if r.Blob != nil || r.Text == "" {
		fmt.Fprintf(b, "[resource %s, %s, %d bytes]", r.URI, mime, len(r.Blob))
		return
	}
	fmt.Fprintf(b, "[resource %s, %s]\n%s", r.URI, mime, r.Text)
}
