package llmtest

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPieces(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want []string
	}{
		{"empty", "", 3, nil},
		{"exact", "abcdef", 3, []string{"abc", "def"}},
		{"rest", "abcdefg", 3, []string{"abc", "def", "g"}},
		{"default size", "abcdefghij", 0, []string{"abcdefg", "hij"}},
		{"runes not bytes", "日本語のテキスト", 3, []string{"日本語", "のテキ", "スト"}},
		{"emoji", "a😀b😀", 2, []string{"a😀", "b😀"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pieces(tt.s, tt.n)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("pieces(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
		})
	}
}

func FuzzPieces(f *testing.F) {
	for _, s := range []string{"", "abcdef", "日本語のテキスト", "a😀b😀", "\xff\xfe"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n%50 + 1
		if n <= 0 {
			n += 50
		}
		ps := pieces(s, n)
		if strings.Join(ps, "") != s {
			t.Fatalf("pieces of %q do not join back: %q", s, ps)
		}
		for i, p := range ps {
			if p == "" || utf8.RuneCountInString(p) > n {
				t.Fatalf("piece %d %q of size %d", i, p, n)
			}
			if i < len(ps)-1 && utf8.RuneCountInString(p) != n {
				t.Fatalf("piece %d %q is short", i, p)
			}
		}
	})
}

// decodeSeeds are request bodies for both providers, valid and not.
var decodeSeeds = []string{
	`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":9,"tools":[{"type":"function","function":{"name":"bash"}}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url"}]}],"max_completion_tokens":3}`,
	`{"model":"c","max_tokens":5,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"},{"type":"text","text":"go"}]}],"stream":true,"tools":[{"name":"bash"}]}`,
	`{"model":"c","max_tokens":0,"messages":[]}`,
	`{"messages":null}`,
	`{`,
	`[]`,
	`{"model":"m","messages":[{"role":"user","content":7}]}`,
}

// FuzzDecode feeds both decoders any body: they must not panic, must refuse
// with errBadRequest only, and whatever they accept must render as a reply
// whose events are well-formed.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add(s, "text", "thinking", `{"a":1}`)
	}
	f.Fuzz(func(t *testing.T, body, text, thinking, args string) {
		for _, w := range []wire{openAIWire{}, anthropicWire{}} {
			req := Request{Provider: w.provider(), Body: json.RawMessage(body)}
			if err := w.decode([]byte(body), &req); err != nil {
				if !strings.Contains(err.Error(), errBadRequest.Error()) {
					t.Fatalf("%s: error %v does not wrap errBadRequest", w.provider(), err)
				}
				if b := w.errorBody(1, 400, err.Error()); !json.Valid([]byte(b)) {
					t.Fatalf("error body is not JSON: %s", b)
				}
				continue
			}
			rp := Reply{Text: text, Thinking: thinking, ToolCalls: []ToolCall{{Name: "t", Arguments: args}}}
			events, err := w.events(1, req, rp)
			if err != nil {
				t.Fatalf("%s: events: %v", w.provider(), err)
			}
			for _, ev := range events {
				if !strings.HasSuffix(ev, "\n\n") || strings.Count(ev, "\n\n") != 1 {
					t.Fatalf("%s: event %q is not one SSE event", w.provider(), ev)
				}
				data := ev[strings.Index(ev, "data: ")+len("data: ") : len(ev)-2]
				if data != "[DONE]" && !json.Valid([]byte(data)) {
					t.Fatalf("%s: event data is not JSON: %q", w.provider(), data)
				}
			}
		}
	})
}
