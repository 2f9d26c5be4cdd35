package hooks

import (
	"strings"
	"testing"
)

const claudeTranscript = `{"type":"user","message":{"role":"user","content":"hi"},"sessionId":"s"}
{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":5,"output_tokens":7}}}
{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"tool_use","id":"tu","name":"Bash","input":{}}],"usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":5,"output_tokens":30}}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu","content":"ok"}]}}
not json at all "usage"
{"type":"assistant","message":{"id":"msg_2","model":"claude-haiku-4-5","usage":{"input_tokens":200,"output_tokens":10}}}
{"type":"assistant","message":{"id":"msg_3","usage":{"input_tokens":-5,"output_tokens":10}}}
`

const codexTranscript = `{"timestamp":"2026-11-25T07:00:00Z","type":"session_meta","payload":{"id":"s"}}
{"type":"turn_context","payload":{"cwd":"/p","model":"gpt-5-codex"}}
{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":50,"total_tokens":1050},"last_token_usage":{"input_tokens":1000,"output_tokens":50}}}}
{"type":"event_msg","payload":{"type":"token_count","info":null}}
{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":2500,"output_tokens":80}}}}
`

func TestReadTranscriptUse(t *testing.T) {
	for _, tc := range []struct {
		agent, text string
		want        TranscriptUse
	}{
		// msg_1 counted once (its last part), msg_2 added, msg_3 refused.
		{ClaudeCode, claudeTranscript, TranscriptUse{Model: "claude-haiku-4-5", Input: 125 + 200, Output: 30 + 10}},
		{Codex, codexTranscript, TranscriptUse{Model: "gpt-5-codex", Input: 2500, Output: 80}},
		{ClaudeCode, "", TranscriptUse{}},
	} {
		got, err := ReadTranscriptUse(tc.agent, strings.NewReader(tc.text))
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.agent, got, err, tc.want)
		}
	}
	if _, err := ReadTranscriptUse(Gemini, strings.NewReader("{}\n")); err == nil {
		t.Error("a Gemini transcript was read")
	}
}

func FuzzReadTranscriptUse(f *testing.F) {
	f.Add(ClaudeCode, claudeTranscript)
	f.Add(Codex, codexTranscript)
	f.Fuzz(func(t *testing.T, agent, text string) {
		if agent != ClaudeCode && agent != Codex {
			agent = ClaudeCode
		}
		u, err := ReadTranscriptUse(agent, strings.NewReader(text))
		if err == nil && (u.Input < 0 || u.Output < 0) {
			t.Fatalf("negative use %+v", u)
		}
	})
}
