package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Anthropic starts a scripted Anthropic Messages API (POST /v1/messages,
// streaming or not). Point ANTHROPIC_BASE_URL at its URL.
func Anthropic(t testing.TB, script Script) *Server {
	return newServer(t, script, func(s *Server) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/messages", s.anthropicMessages)
		mux.HandleFunc("POST /v1/messages/count_tokens", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"input_tokens":10}`))
		})
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not scripted"}}`, 404)
		})
		return mux
	})
}

// anthropicRequest reads the tool results of a Messages request.
func anthropicRequest(path string, body map[string]any) *Request {
	r := &Request{Path: path, Body: body}
	if tools, ok := body["tools"].([]any); ok && len(tools) > 0 {
		r.HasTools = true
	}
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		blocks, _ := mm["content"].([]any)
		for _, b := range blocks {
			bb, _ := b.(map[string]any)
			if bb["type"] != "tool_result" {
				continue
			}
			id, _ := bb["tool_use_id"].(string)
			isErr, _ := bb["is_error"].(bool)
			r.Results = append(r.Results, ToolResult{ID: id, Content: textOf(bb["content"]), IsError: isErr})
		}
	}
	return r
}

func (s *Server) anthropicMessages(w http.ResponseWriter, hr *http.Request) {
	body, ok := readBody(w, hr)
	if !ok {
		return
	}
	req := anthropicRequest(hr.URL.Path, body)
	s.record(req)
	reply := s.script(req)
	n := s.next()
	model, _ := body["model"].(string)
	var block map[string]any
	var delta map[string]any
	stop := "end_turn"
	if reply.Tool != nil {
		in, _ := json.Marshal(reply.Tool.Input)
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%03d", n), "name": reply.Tool.Name, "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(in)}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": ""}
		delta = map[string]any{"type": "text_delta", "text": reply.Text}
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	msgID := fmt.Sprintf("msg_%03d", n)
	if stream, _ := body["stream"].(bool); !stream {
		full := map[string]any{}
		for k, v := range block {
			full[k] = v
		}
		if reply.Tool != nil {
			full["input"] = reply.Tool.Input
		} else {
			full["text"] = reply.Text
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": []any{full}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	e := newSSE(w)
	e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": msgID, "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block})
	e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta})
	e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	e.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
}

// Text returns the text of a request's first message (the user's prompt),
// for scripts that branch on it.
func (r *Request) Text() string {
	msgs, _ := r.Body["messages"].([]any)
	if len(msgs) == 0 {
		if in, ok := r.Body["input"].([]any); ok {
			var parts []string
			for _, m := range in {
				mm, _ := m.(map[string]any)
				parts = append(parts, textOf(mm["content"]))
			}
			return strings.Join(parts, "\n")
		}
		return ""
	}
	mm, _ := msgs[0].(map[string]any)
	return textOf(mm["content"])
}
