package modeltest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Gemini starts a scripted Gemini API (generateContent and
// streamGenerateContent under /v1beta/models/). Point
// GOOGLE_GEMINI_BASE_URL at its URL. A tool call is sent as a functionCall
// part; the agent's functionResponse parts are the tool results.
func Gemini(t testing.TB, script Script) *Server {
	return newServer(t, script, func(s *Server) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /", s.gemini)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"code":404,"message":"not scripted","status":"NOT_FOUND"}}`, 404)
		})
		return mux
	})
}

// geminiRequest reads the tool results of a generateContent request.
func geminiRequest(path string, body map[string]any) *Request {
	r := &Request{Path: path, Body: body}
	if tools, ok := body["tools"].([]any); ok && len(tools) > 0 {
		r.HasTools = true
	}
	contents, _ := body["contents"].([]any)
	n := 0
	for _, c := range contents {
		cm, _ := c.(map[string]any)
		parts, _ := cm["parts"].([]any)
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			fr, ok := pm["functionResponse"].(map[string]any)
			if !ok {
				continue
			}
			n++
			id, _ := fr["id"].(string)
			if id == "" {
				id, _ = fr["name"].(string)
				id += "#" + string(rune('0'+n))
			}
			resp, _ := fr["response"].(map[string]any)
			content, isErr := "", false
			if e, ok := resp["error"]; ok && e != nil {
				content, isErr = textOf(e), true
			} else {
				content = textOf(resp["output"])
				if content == "" {
					content = textOf(resp)
				}
			}
			r.Results = append(r.Results, ToolResult{ID: id, Content: content, IsError: isErr})
		}
	}
	return r
}

func (s *Server) gemini(w http.ResponseWriter, hr *http.Request) {
	path := hr.URL.Path
	if !strings.Contains(path, ":generateContent") && !strings.Contains(path, ":streamGenerateContent") {
		if strings.Contains(path, ":countTokens") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"totalTokens":10}`))
			return
		}
		http.Error(w, `{"error":{"code":404,"message":"not scripted","status":"NOT_FOUND"}}`, 404)
		return
	}
	body, ok := readBody(w, hr)
	if !ok {
		return
	}
	req := geminiRequest(path, body)
	s.record(req)
	reply := s.script(req)
	s.next()
	var part map[string]any
	if reply.Tool != nil {
		part = map[string]any{"functionCall": map[string]any{"name": reply.Tool.Name, "args": reply.Tool.Input}}
	} else {
		part = map[string]any{"text": reply.Text}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-2.5-pro",
	}
	if strings.Contains(path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		b, _ := json.Marshal(resp)
		_, _ = w.Write([]byte("data: " + string(b) + "\r\n\r\n"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
