package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// openAIWire is the OpenAI chat completions format.
type openAIWire struct{}

const openAIFingerprint = "fp_llmtest"

func (openAIWire) provider() string        { return ProviderOpenAI }
func (openAIWire) path() string            { return "/v1/chat/completions" }
func (openAIWire) requestIDHeader() string { return "X-Request-Id" }

// openAIRequest is the part of a chat completions request the server reads.
type openAIRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int `json:"max_tokens"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	Tools               []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (openAIWire) decode(body []byte, req *Request) error {
	var b openAIRequest
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Errorf("%w: we could not parse the JSON body of your request: %v", errBadRequest, err)
	}
	switch {
	case b.Model == "":
		return fmt.Errorf("%w: you must provide a model parameter", errBadRequest)
	case len(b.Messages) == 0:
		return fmt.Errorf("%w: [] is too short - 'messages'", errBadRequest)
	case b.StreamOptions != nil && !b.Stream:
		return fmt.Errorf("%w: the 'stream_options' parameter is only allowed when 'stream' is enabled", errBadRequest)
	}
	req.Model, req.Stream = b.Model, b.Stream
	req.StreamUsage = b.StreamOptions != nil && b.StreamOptions.IncludeUsage
	for _, mt := range []*int{b.MaxTokens, b.MaxCompletionTokens} {
		if mt != nil {
			req.MaxTokens = *mt
		}
	}
	var system []string
	for i, m := range b.Messages {
		text, err := textOf(m.Content)
		if err != nil {
			return fmt.Errorf("%w: messages[%d].content: %v", errBadRequest, i, err)
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "user":
			req.LastUser = text
		case "assistant", "tool":
		default:
			return fmt.Errorf("%w: messages[%d].role: %q is not one of system, developer, user, assistant, tool", errBadRequest, i, m.Role)
		}
	}
	req.System = strings.Join(system, "\n")
	for _, t := range b.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	return nil
}

// textOf reads message content: a string, null, or an array of parts whose
// text parts are joined by newlines.
func textOf(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// openAIFinish is the finish_reason of a reply.
func openAIFinish(rp Reply) string {
	switch {
	case rp.CutOff:
		return "length"
	case len(rp.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func openAICallID(n, i int, tc ToolCall) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("call_llmtest%04d_%d", n, i)
}

// openAIUsage is the usage object of a reply.
func openAIUsage(u Usage) obj {
	return obj{{"prompt_tokens", u.Input}, {"completion_tokens", u.Output}, {"total_tokens", u.Input + u.Output}}
}

// events streams rp as OpenAI does: a first chunk with the role, reasoning
// and content pieces, each tool call's header (index, id, type, name) and
// argument pieces, a chunk with the finish reason, the usage chunk when
// asked for, and [DONE].
func (openAIWire) events(n int, req Request, rp Reply) ([]string, error) {
	r := &render{}
	id, m := fmt.Sprintf("chatcmpl-llmtest%04d", n), model(req, rp)
	head := func() obj {
		return obj{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", m}, {"system_fingerprint", openAIFingerprint}}
	}
	chunk := func(delta obj, finish any) string {
		c := append(head(), kv{"choices", []obj{{{"index", 0}, {"delta", delta}, {"logprobs", nil}, {"finish_reason", finish}}}})
		if req.StreamUsage {
			c = append(c, kv{"usage", nil})
		}
		return sse("", r.json(c))
	}
	callHead := func(i int) obj {
		tc := rp.ToolCalls[i]
		return obj{{"index", i}, {"id", openAICallID(n, i, tc)}, {"type", "function"},
			{"function", obj{{"name", tc.Name}, {"arguments", ""}}}}
	}

	var ev []string
	first := obj{{"role", "assistant"}, {"content", ""}}
	mergeCall := rp.Text == "" && rp.Thinking == "" && len(rp.ToolCalls) > 0
	if mergeCall { // as OpenAI sends a reply that is only tool calls
		first = obj{{"role", "assistant"}, {"content", nil}, {"tool_calls", []obj{callHead(0)}}}
	}
	ev = append(ev, chunk(append(first, kv{"refusal", nil}), nil))
	for _, p := range pieces(rp.Thinking, rp.ChunkSize) {
		ev = append(ev, chunk(obj{{"reasoning_content", p}}, nil))
	}
	for _, p := range pieces(rp.Text, rp.ChunkSize) {
		ev = append(ev, chunk(obj{{"content", p}}, nil))
	}
	for i, tc := range rp.ToolCalls {
		if i > 0 || !mergeCall {
			ev = append(ev, chunk(obj{{"tool_calls", []obj{callHead(i)}}}, nil))
		}
		for _, p := range pieces(tc.Arguments, rp.ChunkSize) {
			ev = append(ev, chunk(obj{{"tool_calls", []obj{{{"index", i}, {"function", obj{{"arguments", p}}}}}}}, nil))
		}
	}
	ev = append(ev, chunk(obj{}, openAIFinish(rp)))
	if req.StreamUsage {
		u := append(head(), kv{"choices", []obj{}}, kv{"usage", openAIUsage(usage(req, rp))})
		ev = append(ev, sse("", r.json(u)))
	}
	ev = append(ev, sse("", "[DONE]"))
	return ev, r.err
}

// message renders rp as one chat.completion object.
func (openAIWire) message(n int, req Request, rp Reply) (string, error) {
	r := &render{}
	var content any = rp.Text
	if rp.Text == "" && len(rp.ToolCalls) > 0 {
		content = nil
	}
	msg := obj{{"role", "assistant"}, {"content", content}}
	if rp.Thinking != "" {
		msg = append(msg, kv{"reasoning_content", rp.Thinking})
	}
	if len(rp.ToolCalls) > 0 {
		var calls []obj
		for i, tc := range rp.ToolCalls {
			calls = append(calls, obj{{"id", openAICallID(n, i, tc)}, {"type", "function"},
				{"function", obj{{"name", tc.Name}, {"arguments", tc.Arguments}}}})
		}
		msg = append(msg, kv{"tool_calls", calls})
	}
	msg = append(msg, kv{"refusal", nil})
	body := obj{
		{"id", fmt.Sprintf("chatcmpl-llmtest%04d", n)}, {"object", "chat.completion"}, {"created", created},
		{"model", model(req, rp)},
		{"choices", []obj{{{"index", 0}, {"message", msg}, {"logprobs", nil}, {"finish_reason", openAIFinish(rp)}}}},
		{"usage", openAIUsage(usage(req, rp))}, {"system_fingerprint", openAIFingerprint},
	}
	return r.json(body), r.err
}

// errorBody is OpenAI's error object.
func (openAIWire) errorBody(_, status int, message string) string {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case status >= 500:
		typ = "server_error"
	}
	if message == "" {
		switch status {
		case http.StatusTooManyRequests:
			message = "Rate limit reached for requests. Please try again later."
		case http.StatusServiceUnavailable:
			message = "The server is overloaded or not ready yet."
		default:
			message = http.StatusText(status)
		}
	}
	r := &render{}
	return r.json(obj{{"error", obj{{"message", message}, {"type", typ}, {"param", nil}, {"code", code}}}})
}
