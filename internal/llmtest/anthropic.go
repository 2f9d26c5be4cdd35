package llmtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropicWire is the Anthropic Messages format.
type anthropicWire struct{}

func (anthropicWire) provider() string        { return ProviderAnthropic }
func (anthropicWire) path() string            { return "/v1/messages" }
func (anthropicWire) requestIDHeader() string { return "Request-Id" }

// anthropicRequest is the part of a Messages request the server reads.
type anthropicRequest struct {
	Model     string          `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream bool `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func (anthropicWire) decode(body []byte, req *Request) error {
	var b anthropicRequest
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Errorf("%w: there was an issue with your request body: %v", errBadRequest, err)
	}
	switch {
	case b.Model == "":
		return fmt.Errorf("%w: model: Field required", errBadRequest)
	case b.MaxTokens == nil:
		return fmt.Errorf("%w: max_tokens: Field required", errBadRequest)
	case *b.MaxTokens < 1:
		return fmt.Errorf("%w: max_tokens: Input should be greater than or equal to 1", errBadRequest)
	case len(b.Messages) == 0:
		return fmt.Errorf("%w: messages: at least one message is required", errBadRequest)
	}
	req.Model, req.MaxTokens, req.Stream = b.Model, *b.MaxTokens, b.Stream
	system, err := textOf(b.System)
	if err != nil {
		return fmt.Errorf("%w: system: %v", errBadRequest, err)
	}
	req.System = system
	for i, m := range b.Messages {
		text, err := textOf(m.Content)
		if err != nil {
			return fmt.Errorf("%w: messages.%d.content: %v", errBadRequest, i, err)
		}
		switch m.Role {
		case "user":
			req.LastUser = text
		case "assistant":
		default:
			return fmt.Errorf("%w: messages.%d.role: Input should be 'user' or 'assistant'", errBadRequest, i)
		}
	}
	for _, t := range b.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	return nil
}

// anthropicStop is the stop_reason of a reply.
func anthropicStop(rp Reply) string {
	switch {
	case rp.CutOff:
		return "max_tokens"
	case len(rp.ToolCalls) > 0:
		return "tool_use"
	}
	return "end_turn"
}

func anthropicCallID(n, i int, tc ToolCall) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("toolu_llmtest%04d_%d", n, i)
}

// signature is a stable stand-in for the signature of a thinking block.
func signature(thinking string) string {
	sum := sha256.Sum256([]byte("llmtest:" + thinking))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// pingData is a ping event's data as the API sends it.
const pingData = `{"type": "ping"}`

// events streams rp as the Messages API does: message_start, one content
// block each for thinking (with its signature), text and every tool call,
// a ping after the first block starts, message_delta with the stop reason
// and output tokens, and message_stop.
func (anthropicWire) events(n int, req Request, rp Reply) ([]string, error) {
	r := &render{}
	u := usage(req, rp)
	ev := []string{sse("message_start", r.json(obj{{"type", "message_start"}, {"message", obj{
		{"id", fmt.Sprintf("msg_llmtest%04d", n)}, {"type", "message"}, {"role", "assistant"},
		{"content", []obj{}}, {"model", model(req, rp)}, {"stop_reason", nil}, {"stop_sequence", nil},
		{"usage", obj{{"input_tokens", u.Input}, {"output_tokens", 1}}},
	}}}))}
	blocks := 0
	block := func(start obj, deltas []obj) {
		i := blocks
		blocks++
		ev = append(ev, sse("content_block_start", r.json(obj{{"type", "content_block_start"}, {"index", i}, {"content_block", start}})))
		if i == 0 {
			ev = append(ev, sse("ping", pingData))
		}
		for _, d := range deltas {
			ev = append(ev, sse("content_block_delta", r.json(obj{{"type", "content_block_delta"}, {"index", i}, {"delta", d}})))
		}
		ev = append(ev, sse("content_block_stop", r.json(obj{{"type", "content_block_stop"}, {"index", i}})))
	}
	if rp.Thinking != "" {
		var ds []obj
		for _, p := range pieces(rp.Thinking, rp.ChunkSize) {
			ds = append(ds, obj{{"type", "thinking_delta"}, {"thinking", p}})
		}
		ds = append(ds, obj{{"type", "signature_delta"}, {"signature", signature(rp.Thinking)}})
		block(obj{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}, ds)
	}
	if rp.Text != "" {
		var ds []obj
		for _, p := range pieces(rp.Text, rp.ChunkSize) {
			ds = append(ds, obj{{"type", "text_delta"}, {"text", p}})
		}
		block(obj{{"type", "text"}, {"text", ""}}, ds)
	}
	for i, tc := range rp.ToolCalls {
		ds := []obj{{{"type", "input_json_delta"}, {"partial_json", ""}}}
		for _, p := range pieces(tc.Arguments, rp.ChunkSize) {
			ds = append(ds, obj{{"type", "input_json_delta"}, {"partial_json", p}})
		}
		block(obj{{"type", "tool_use"}, {"id", anthropicCallID(n, i, tc)}, {"name", tc.Name}, {"input", obj{}}}, ds)
	}
	if blocks == 0 {
		ev = append(ev, sse("ping", pingData))
	}
	ev = append(ev,
		sse("message_delta", r.json(obj{{"type", "message_delta"},
			{"delta", obj{{"stop_reason", anthropicStop(rp)}, {"stop_sequence", nil}}},
			{"usage", obj{{"output_tokens", u.Output}}}})),
		sse("message_stop", r.json(obj{{"type", "message_stop"}})),
	)
	return ev, r.err
}

// message renders rp as one Message object.
func (anthropicWire) message(n int, req Request, rp Reply) (string, error) {
	r := &render{}
	content := []obj{}
	if rp.Thinking != "" {
		content = append(content, obj{{"type", "thinking"}, {"thinking", rp.Thinking}, {"signature", signature(rp.Thinking)}})
	}
	if rp.Text != "" {
		content = append(content, obj{{"type", "text"}, {"text", rp.Text}})
	}
	for i, tc := range rp.ToolCalls {
		args := strings.TrimSpace(tc.Arguments)
		if args == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) {
			return "", fmt.Errorf("tool call %q: arguments %q are not JSON, which a Messages reply cannot carry", tc.Name, tc.Arguments)
		}
		content = append(content, obj{{"type", "tool_use"}, {"id", anthropicCallID(n, i, tc)}, {"name", tc.Name}, {"input", json.RawMessage(args)}})
	}
	u := usage(req, rp)
	body := obj{
		{"id", fmt.Sprintf("msg_llmtest%04d", n)}, {"type", "message"}, {"role", "assistant"},
		{"model", model(req, rp)}, {"content", content},
		{"stop_reason", anthropicStop(rp)}, {"stop_sequence", nil},
		{"usage", obj{{"input_tokens", u.Input}, {"output_tokens", u.Output}}},
	}
	return r.json(body), r.err
}

// errorBody is Anthropic's error object.
func (anthropicWire) errorBody(n, status int, message string) string {
	typ, def := "api_error", "Internal server error"
	switch status {
	case http.StatusBadRequest:
		typ, def = "invalid_request_error", "Invalid request"
	case http.StatusUnauthorized:
		typ, def = "authentication_error", "invalid x-api-key"
	case http.StatusForbidden:
		typ, def = "permission_error", "Your API key does not have permission to use the specified resource."
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		typ, def = "not_found_error", "The requested resource could not be found."
	case http.StatusRequestEntityTooLarge:
		typ, def = "request_too_large", "Request exceeds the maximum allowed number of bytes."
	case http.StatusTooManyRequests:
		typ, def = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
	case http.StatusServiceUnavailable, 529:
		typ, def = "overloaded_error", "Overloaded"
	}
	if message == "" {
		message = def
	}
	r := &render{}
	return r.json(obj{{"type", "error"}, {"error", obj{{"type", typ}, {"message", message}}},
		{"request_id", fmt.Sprintf("req_llmtest%04d", n)}})
}
