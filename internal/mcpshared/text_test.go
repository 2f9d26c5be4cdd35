package mcpshared_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/overseer-dev/overseer/internal/mcpshared"
)

func TestText(t *testing.T) {
	cases := []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"nil result", nil, ""},
		{"no content", &mcp.CallToolResult{}, ""},
		{"texts, one per line", &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b\nc"}}}, "a\nb\nc"},
		{"every kind of content", &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "before"},
			&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)},
			&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)},
			&mcp.ResourceLink{URI: "file:///x.txt", Name: "x"},
			&mcp.ResourceLink{URI: "file:///y.txt"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://t", MIMEType: "text/plain", Text: "embedded text"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://b", Blob: []byte{1, 2, 3}}},
			&mcp.EmbeddedResource{},
			&mcp.TextContent{Text: "after"},
		}}, "before\n[image image/png, 1234 bytes]\n[audio audio/wav, 10 bytes]\n[resource link file:///x.txt (x)]\n" +
			"[resource link file:///y.txt]\n[resource mem://t, text/plain]\nembedded text\n" +
			"[resource mem://b, unknown type, 3 bytes]\n[resource]\nafter"},
		{"structured content alone", &mcp.CallToolResult{StructuredContent: map[string]any{"sum": 5}}, `{"sum":5}`},
		{"structured content with text: the text", &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: "5"}}, StructuredContent: map[string]any{"sum": 5}}, "5"},
		{"unmarshalable structured content", &mcp.CallToolResult{StructuredContent: func() {}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := mcpshared.Text(tc.res); got != tc.want {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func BenchmarkText(b *testing.B) {
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: strings.Repeat("line of output\n", 200)},
		&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 4096)},
		&mcp.TextContent{Text: "done"},
	}}
	b.ReportAllocs()
	for b.Loop() {
		_ = mcpshared.Text(res)
	}
}
