package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/plugin"
	"github.com/overseer-dev/overseer/plugins/llm/sse"
)

func TestEventTooLarge(t *testing.T) {
	big := "data: " + strings.Repeat("x", sse.MaxEvent+1) + "\n\n"
	_, _, err := decodeStream(strings.NewReader(big), nil)
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
}

// FuzzDecodeStream feeds arbitrary streams to the SSE reader and tool-call
// assembler: it must never panic, and every reply it accepts carries only
// named tool calls with an ID and a JSON object as arguments.
func FuzzDecodeStream(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, fn := range files {
		b, err := os.ReadFile(fn)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"function\":{\"arguments\":\"{}\"}}]},\"finish_reason\":\"stop\"}]}\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var streamed strings.Builder
		resp, _, err := decodeStream(bytes.NewReader(in), func(d plugin.Delta) { streamed.WriteString(d.Text) })
		if err != nil {
			return
		}
		if resp.StopReason == "" {
			t.Fatal("accepted a reply without a stop reason")
		}
		if streamed.String() != resp.Text {
			t.Fatalf("streamed %q but reply text is %q", streamed.String(), resp.Text)
		}
		for _, c := range resp.ToolCalls {
			var obj map[string]any
			if c.Name == "" || c.ID == "" || json.Unmarshal(c.Arguments, &obj) != nil || obj == nil {
				t.Fatalf("accepted a bad tool call %+v", c)
			}
		}
	})
}

func BenchmarkDecodeStream(b *testing.B) {
	one, err := os.ReadFile(filepath.Join("testdata", "tools_indexed.sse"))
	if err != nil {
		b.Fatal(err)
	}
	// a long text reply: 2000 content chunks
	var sb strings.Builder
	for range 2000 {
		sb.WriteString(`data: {"model":"m","choices":[{"index":0,"delta":{"content":"token "}}]}` + "\n\n")
	}
	sb.WriteString(`data: {"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
	long := []byte(sb.String())
	for _, bc := range []struct {
		name string
		in   []byte
	}{{"tool_calls", one}, {"text_2000_chunks", long}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				if _, _, err := decodeStream(bytes.NewReader(bc.in), func(plugin.Delta) {}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
