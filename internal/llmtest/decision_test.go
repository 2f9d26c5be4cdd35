package llmtest_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/llmtest"
	"github.com/overseer-dev/overseer/plugin"
)

// TestDecision checks that the loop's own parser reads what Decision builds,
// also after the reply streamed through a plugin in pieces.
func TestDecision(t *testing.T) {
	tests := []struct {
		name       string
		v          map[string]any
		wantAction string
		wantTool   string
		wantArgs   map[string]any
		wantHuman  bool
	}{
		{
			name:       "tool call with shell operators",
			v:          map[string]any{"action": "tool_call", "tool": "bash", "args": map[string]any{"command": "ls -l && echo '<done>' > out.txt"}, "confidence": 0.9, "intent": "see the files"},
			wantAction: firewall.ActionToolCall, wantTool: "bash",
			wantArgs: map[string]any{"command": "ls -l && echo '<done>' > out.txt"},
		},
		{
			name:       "ask a person",
			v:          map[string]any{"action": "ask_human", "reason": "Which file?", "confidence": 0.4},
			wantAction: firewall.ActionAskHuman,
			wantHuman:  true,
		},
		{
			name:       "done, in Chinese",
			v:          map[string]any{"action": "done", "reason": "任务完成", "confidence": 1},
			wantAction: firewall.ActionDone,
			wantHuman:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block := llmtest.Decision(tt.v)
			if !strings.HasPrefix(block, "```decision\n{") || !strings.HasSuffix(block, "}\n```") || strings.Contains(block, `\u003c`) {
				t.Fatalf("block %q", block)
			}
			for _, p := range providers {
				srv := p.start(t, llmtest.Queue(llmtest.Reply{Text: "Thinking it over.\n\n" + block, ChunkSize: 5}))
				resp, err := p.client(t, srv).Stream(context.Background(), request, func(plugin.Delta) {})
				if err != nil {
					t.Fatal(err)
				}
				d := firewall.ParseDecision(resp.Text)
				if d.Source != firewall.SourceFenced || d.Action != tt.wantAction || d.Tool != tt.wantTool {
					t.Errorf("%s: parsed %+v", p.name, d)
				}
				if tt.wantArgs != nil && !reflect.DeepEqual(d.Args, tt.wantArgs) {
					t.Errorf("%s: args %v, want %v", p.name, d.Args, tt.wantArgs)
				}
				if tt.wantHuman && !d.HumanRequired {
					t.Errorf("%s: %s does not require a person", p.name, tt.wantAction)
				}
			}
		})
	}
}

func TestDecisionPanicsOnUnencodable(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a value JSON cannot hold")
		}
	}()
	llmtest.Decision(map[string]any{"action": make(chan int)})
}

// BenchmarkStream measures a whole streamed reply of about 4 KB, in pieces of
// 16 runes, through each real plugin client.
func BenchmarkStream(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 90)
	for _, p := range providers {
		b.Run(p.name, func(b *testing.B) {
			srv := p.start(b, llmtest.Func(func(int, llmtest.Request) llmtest.Reply {
				return llmtest.Reply{Text: text, ChunkSize: 16}
			}))
			c := p.client(b, srv)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.Stream(context.Background(), request, func(plugin.Delta) {})
				if err != nil || len(resp.Text) != len(text) {
					b.Fatalf("%v, %d bytes", err, len(resp.Text))
				}
			}
		})
	}
}
