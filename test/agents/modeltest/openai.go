package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// Responses starts a scripted OpenAI Responses API (POST /v1/responses,
// streaming). Configure the agent's provider with base URL URL+"/v1".
// A tool call is sent as a function_call item; its input is JSON-encoded
// as the call's arguments.
func Responses(t testing.TB, script Script) *Server {
	return newServer(t, script, func(s *Server) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/responses", s.responses)
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model"}],"models":[]}`))
		})
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"not scripted","type":"invalid_request_error"}}`, 404)
		})
		return mux
	})
}

// responsesRequest reads the tool results of a Responses request.
func responsesRequest(path string, body map[string]any) *Request {
	r := &Request{Path: path, Body: body}
	if tools, ok := body["tools"].([]any); ok && len(tools) > 0 {
		r.HasTools = true
	}
	in, _ := body["input"].([]any)
	for _, it := range in {
		m, _ := it.(map[string]any)
		if m["type"] != "function_call_output" && m["type"] != "custom_tool_call_output" {
			continue
		}
		id, _ := m["call_id"].(string)
		out := textOf(m["output"])
		// Codex sends {"output": "...", "metadata": {"exit_code": N}} as a
		// JSON string in some versions.
		var wrapped struct {
			Output   string `json:"output"`
			Metadata struct {
				ExitCode *int `json:"exit_code"`
			} `json:"metadata"`
		}
		isErr := false
		if json.Unmarshal([]byte(out), &wrapped) == nil && wrapped.Output != "" {
			out = wrapped.Output
			isErr = wrapped.Metadata.ExitCode != nil && *wrapped.Metadata.ExitCode != 0
		}
		if s, ok := m["success"].(bool); ok && !s {
			isErr = true
		}
		r.Results = append(r.Results, ToolResult{ID: id, Content: out, IsError: isErr})
	}
	return r
}

func (s *Server) responses(w http.ResponseWriter, hr *http.Request) {
	body, ok := readBody(w, hr)
	if !ok {
		return
	}
	req := responsesRequest(hr.URL.Path, body)
	s.record(req)
	reply := s.script(req)
	n := s.next()
	respID := fmt.Sprintf("resp_%03d", n)
	var item map[string]any
	switch {
	case reply.Tool != nil && reply.Tool.Freeform != "":
		item = map[string]any{"type": "custom_tool_call", "id": fmt.Sprintf("ctc_%03d", n), "call_id": fmt.Sprintf("call_%03d", n),
			"name": reply.Tool.Name, "input": reply.Tool.Freeform, "status": "completed"}
	case reply.Tool != nil:
		args, _ := json.Marshal(reply.Tool.Input)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%03d", n), "call_id": fmt.Sprintf("call_%03d", n),
			"name": reply.Tool.Name, "arguments": string(args), "status": "completed"}
		if reply.Tool.Namespace != "" {
			item["namespace"] = reply.Tool.Namespace
		}
	default:
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%03d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}}
	}
	usage := map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}
	e := newSSE(w)
	e.event("response.created", map[string]any{"type": "response.created", "sequence_number": 0,
		"response": map[string]any{"id": respID, "object": "response", "status": "in_progress", "output": []any{}}})
	added := map[string]any{}
	for k, v := range item {
		added[k] = v
	}
	added["status"] = "in_progress"
	e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": added})
	e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item})
	e.event("response.completed", map[string]any{"type": "response.completed", "sequence_number": 3,
		"response": map[string]any{"id": respID, "object": "response", "status": "completed", "output": []any{item}, "usage": usage}})
}
