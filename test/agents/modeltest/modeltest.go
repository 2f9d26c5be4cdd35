// Package modeltest serves scripted language-model APIs on loopback, so the
// real agent CLIs (Claude Code, Codex, Gemini CLI) can run offline in tests:
// an Anthropic Messages API, an OpenAI Responses API and a Gemini API, all
// streaming with server-sent events. A script decides each reply from the request; every
// request is kept for the test to inspect (for example, the tool result a
// denied call sent back to the model).
package modeltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// ToolCall is a tool call the scripted model makes.
type ToolCall struct {
	Name  string
	Input map[string]any
	// Freeform, when set, is the input of a free-form tool (the Responses
	// API's custom_tool_call, as Codex's apply_patch): Input is not sent.
	Freeform string
	// Namespace is the namespace of a tool the agent offers in one (the
	// Responses API: Codex offers each MCP server's tools in a namespace
	// "mcp__<server>"); empty for the others.
	Namespace string
}

// Reply is one scripted model turn: a tool call, or else a text answer.
type Reply struct {
	Tool *ToolCall
	Text string
}

// ToolResult is a tool result the agent sent back to the model.
type ToolResult struct {
	ID      string
	Content string
	IsError bool
}

// Request is one model request as the server received it.
type Request struct {
	Path string
	Body map[string]any
	// Results are the tool results in the request's conversation.
	Results []ToolResult
	// HasTools is true when the request offers the model tools (the main
	// conversation, not a side request such as a title).
	HasTools bool
}

// Script decides the reply to a request.
type Script func(r *Request) Reply

// OneCall calls the tool once; once the conversation holds its result,
// it answers with text.
func OneCall(name string, input map[string]any) Script {
	return func(r *Request) Reply {
		if !r.HasTools {
			return Reply{Text: "ok"}
		}
		if len(r.Results) == 0 {
			return Reply{Tool: &ToolCall{Name: name, Input: input}}
		}
		return Reply{Text: "done: " + r.Results[len(r.Results)-1].Content}
	}
}

// Steps makes the calls one after the other, each once the conversation
// holds the result of the one before; then it answers with text.
func Steps(calls ...ToolCall) Script {
	return func(r *Request) Reply {
		if !r.HasTools {
			return Reply{Text: "ok"}
		}
		if n := len(r.Results); n < len(calls) {
			c := calls[n]
			return Reply{Tool: &c}
		}
		return Reply{Text: "done"}
	}
}

// Server is a scripted model server.
type Server struct {
	*httptest.Server
	script Script
	mu     sync.Mutex
	reqs   []*Request
	seq    int
}

// Requests returns the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// Results returns every tool result the agent sent, in order, without
// repeats (a conversation is resent whole with each request).
func (s *Server) Results() []ToolResult {
	seen := map[string]bool{}
	var out []ToolResult
	for _, r := range s.Requests() {
		for _, tr := range r.Results {
			if !seen[tr.ID] {
				seen[tr.ID] = true
				out = append(out, tr)
			}
		}
	}
	return out
}

func (s *Server) next() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

func (s *Server) record(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
}

func newServer(t testing.TB, script Script, h func(s *Server) http.Handler) *Server {
	s := &Server{script: script}
	s.Server = httptest.NewServer(h(s))
	t.Cleanup(s.Close)
	return s
}

func readBody(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		http.Error(w, "not JSON: "+err.Error(), 400)
		return nil, false
	}
	return m, true
}

type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) event(name string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b)
	if e.f != nil {
		e.f.Flush()
	}
}

// textOf flattens a tool result's content (a string or a list of blocks).
func textOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	b, _ := json.Marshal(v)
	return string(b)
}
