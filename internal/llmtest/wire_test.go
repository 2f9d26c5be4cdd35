package llmtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/llmtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// endpoint is where each provider's requests go, relative to Server.URL.
var endpoint = map[string]string{"openai": "/chat/completions", "anthropic": "/v1/messages"}

func start(tb testing.TB, prov string, s llmtest.Script) *llmtest.Server {
	if prov == "openai" {
		return llmtest.NewOpenAI(tb, s)
	}
	return llmtest.NewAnthropic(tb, s)
}

// body is a minimal valid request of each provider.
func body(prov string, stream, usage bool) string {
	if prov == "openai" {
		b := `{"model":"gpt-test","messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":` + strconv.FormatBool(stream)
		if usage {
			b += `,"stream_options":{"include_usage":true}`
		}
		return b + `}`
	}
	return `{"model":"claude-test","max_tokens":100,"system":[{"type":"text","text":"sys"}],"messages":[{"role":"user","content":"hi"}],"stream":` + strconv.FormatBool(stream) + `}`
}

func post(t *testing.T, u, b string) (*http.Response, []byte) {
	t.Helper()
	res, err := http.Post(u, "application/json", strings.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, got
}

// golden is a fixed reply with everything a reply can carry.
var golden = llmtest.Reply{
	Thinking: "Plan: list, then read.",
	Text:     "Listing the files <now> & then reading.",
	ToolCalls: []llmtest.ToolCall{
		{ID: "call_ls", Name: "bash", Arguments: `{"command":"ls -l | head"}`},
		{Name: "read_file", Arguments: `{"path":"a.txt"}`},
	},
	ChunkSize: 9,
	Usage:     &llmtest.Usage{Input: 120, Output: 45},
}

// TestGolden pins the bytes the servers send for fixed replies, so that a
// change of the wire format shows in review. Run with -update to rewrite.
func TestGolden(t *testing.T) {
	tests := []struct {
		file   string
		prov   string
		reply  llmtest.Reply
		stream bool
		usage  bool
		status int
	}{
		{"openai_stream.sse", "openai", golden, true, true, 200},
		{"openai_stream_nousage.sse", "openai", llmtest.Reply{Text: "Hi.", Usage: golden.Usage}, true, false, 200},
		{"openai_stream_tools_only.sse", "openai", llmtest.Reply{ToolCalls: golden.ToolCalls, Usage: golden.Usage}, true, true, 200},
		{"openai_stream_cutoff.sse", "openai", llmtest.Reply{Text: "It goes on and", CutOff: true, Usage: golden.Usage}, true, true, 200},
		{"openai_message.json", "openai", golden, false, false, 200},
		{"openai_error_429.json", "openai", llmtest.Reply{Status: 429, RetryAfter: "1"}, true, true, 429},
		{"anthropic_stream.sse", "anthropic", golden, true, false, 200},
		{"anthropic_stream_cutoff.sse", "anthropic", llmtest.Reply{Text: "It goes on and", CutOff: true, Usage: golden.Usage}, true, false, 200},
		{"anthropic_stream_empty.sse", "anthropic", llmtest.Reply{Usage: golden.Usage}, true, false, 200},
		{"anthropic_message.json", "anthropic", golden, false, false, 200},
		{"anthropic_error_529.json", "anthropic", llmtest.Reply{Status: 529}, true, false, 529},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			srv := start(t, tt.prov, llmtest.Queue(tt.reply))
			res, got := post(t, srv.URL+endpoint[tt.prov], body(tt.prov, tt.stream, tt.usage))
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.status, got)
			}
			wantType := "application/json"
			if strings.HasSuffix(tt.file, ".sse") {
				wantType = "text/event-stream; charset=utf-8"
			}
			if ct := res.Header.Get("Content-Type"); ct != wantType {
				t.Errorf("Content-Type %q, want %q", ct, wantType)
			}
			path := filepath.Join("testdata", tt.file)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("body differs from %s (run with -update to accept)\n got:\n%s\nwant:\n%s", path, got, want)
			}
			checkFormat(t, tt.prov, got, strings.HasSuffix(tt.file, ".sse"))
		})
	}
}

// checkFormat checks, independently of the golden bytes, that a body is
// well-formed: every event of a stream is "event:"/"data:" lines ending in a
// blank line with JSON data whose type matches the event name.
func checkFormat(t *testing.T, prov string, b []byte, stream bool) {
	t.Helper()
	if !stream {
		if !json.Valid(b) {
			t.Errorf("body is not JSON: %s", b)
		}
		return
	}
	if !bytes.HasSuffix(b, []byte("\n\n")) {
		t.Errorf("stream does not end with a blank line")
	}
	events := strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n")
	for i, ev := range events {
		lines := strings.Split(ev, "\n")
		name := ""
		if prov == "anthropic" {
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") {
				t.Fatalf("event %d is not event+data lines: %q", i, ev)
			}
			name, lines = strings.TrimPrefix(lines[0], "event: "), lines[1:]
		}
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "data: ") {
			t.Fatalf("event %d has no single data line: %q", i, ev)
		}
		data := strings.TrimPrefix(lines[0], "data: ")
		if prov == "openai" && i == len(events)-1 {
			if data != "[DONE]" {
				t.Errorf("last event %q, want [DONE]", data)
			}
			continue
		}
		var v struct {
			Type   string `json:"type"`
			Object string `json:"object"`
		}
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("event %d data is not JSON: %v: %s", i, err, data)
		}
		if prov == "anthropic" && v.Type != name {
			t.Errorf("event %q carries type %q", name, v.Type)
		}
		if prov == "openai" && v.Object != "chat.completion.chunk" {
			t.Errorf("chunk %d object %q", i, v.Object)
		}
	}
}

// TestFlushPerEvent reads the raw HTTP response and counts the chunks of its
// chunked body: one per server-sent event shows that each was flushed on its
// own, so clients see the reply as it streams.
func TestFlushPerEvent(t *testing.T) {
	for _, prov := range []string{"openai", "anthropic"} {
		t.Run(prov, func(t *testing.T) {
			srv := start(t, prov, llmtest.Queue(llmtest.Reply{Text: "one two three four", ChunkSize: 4}))
			u, err := url.Parse(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			b := body(prov, true, false)
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
				u.Path+endpoint[prov], u.Host, len(b), b)
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.TransferEncoding) == 0 || res.TransferEncoding[0] != "chunked" {
				t.Fatalf("transfer encoding %v, want chunked", res.TransferEncoding)
			}
			// read the chunk framing by hand: http.ReadResponse left the body
			// unread in br
			var chunks, events int
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("reading chunk size: %v", err)
				}
				size, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
				if err != nil {
					t.Fatalf("chunk size %q: %v", line, err)
				}
				if size == 0 {
					break
				}
				data := make([]byte, size+2)
				if _, err := io.ReadFull(br, data); err != nil {
					t.Fatal(err)
				}
				chunks++
				events += strings.Count(string(data[:size]), "\n\n")
				if !strings.HasSuffix(string(data[:size]), "\n\n") {
					t.Errorf("chunk %d does not end an event: %q", chunks, data[:size])
				}
			}
			if chunks != events || chunks < 5 {
				t.Errorf("%d chunks for %d events: want one flush per event", chunks, events)
			}
		})
	}
}

// TestBadRequests checks that requests a provider would refuse get its
// error body, are recorded, and do not consume the script.
func TestBadRequests(t *testing.T) {
	tests := []struct {
		name     string
		prov     string
		method   string
		path     string
		body     string
		status   int
		wantType string
		wantMsg  string
	}{
		{"wrong path", "openai", "POST", "/v1/completions", body("openai", true, false), 404, "invalid_request_error", "no endpoint"},
		{"wrong method", "openai", "GET", "/v1/chat/completions", "", 405, "invalid_request_error", "not allowed"},
		{"not JSON", "openai", "POST", "/v1/chat/completions", "{", 400, "invalid_request_error", "JSON body"},
		{"no model", "openai", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "model"},
		{"no messages", "openai", "POST", "/v1/chat/completions", `{"model":"m","messages":[]}`, 400, "invalid_request_error", "messages"},
		{"stream_options without stream", "openai", "POST", "/v1/chat/completions", body("openai", false, true), 400, "invalid_request_error", "stream_options"},
		{"unknown role", "openai", "POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"robot","content":"x"}]}`, 400, "invalid_request_error", "robot"},
		{"bad content", "openai", "POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":7}]}`, 400, "invalid_request_error", "content"},
		{"wrong path", "anthropic", "POST", "/v1/complete", body("anthropic", true, false), 404, "not_found_error", "no endpoint"},
		{"not JSON", "anthropic", "POST", "/v1/messages", "[", 400, "invalid_request_error", "request body"},
		{"no max_tokens", "anthropic", "POST", "/v1/messages", `{"model":"c","messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "max_tokens"},
		{"no model", "anthropic", "POST", "/v1/messages", `{"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "model"},
		{"system role in messages", "anthropic", "POST", "/v1/messages", `{"model":"c","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, 400, "invalid_request_error", "role"},
	}
	for _, tt := range tests {
		t.Run(tt.prov+"/"+tt.name, func(t *testing.T) {
			srv := start(t, tt.prov, llmtest.Func(func(int, llmtest.Request) llmtest.Reply {
				return llmtest.Fail("a refused request reached the script")
			}))
			base := strings.TrimSuffix(srv.URL, "/v1")
			req, err := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			got, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status {
				t.Errorf("status %d, want %d", res.StatusCode, tt.status)
			}
			typ, msg := errorOf(t, tt.prov, got)
			if typ != tt.wantType || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("error type %q message %q, want %q naming %q", typ, msg, tt.wantType, tt.wantMsg)
			}
			wantRecorded := 0
			if tt.status == 400 {
				wantRecorded = 1
			}
			if n := len(srv.Requests()); n != wantRecorded {
				t.Errorf("%d requests recorded, want %d", n, wantRecorded)
			}
		})
	}
}

// errorOf reads a provider's error body.
func errorOf(t *testing.T, prov string, b []byte) (typ, msg string) {
	t.Helper()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, b)
	}
	if prov == "anthropic" && e.Type != "error" {
		t.Errorf("Anthropic error body of type %q", e.Type)
	}
	return e.Error.Type, e.Error.Message
}

// TestErrorReplies checks scripted error replies: status, the provider's
// error type, the message and Retry-After.
func TestErrorReplies(t *testing.T) {
	tests := []struct {
		prov       string
		reply      llmtest.Reply
		wantType   string
		wantMsg    string
		wantHeader string
	}{
		{"anthropic", llmtest.Reply{Status: 529}, "overloaded_error", "Overloaded", ""},
		{"anthropic", llmtest.Reply{Status: 503, RetryAfter: "2"}, "overloaded_error", "Overloaded", "2"},
		{"anthropic", llmtest.Reply{Status: 429, RetryAfter: "Sun, 01 Mar 2026 12:00:07 GMT"}, "rate_limit_error", "rate limit", "Sun, 01 Mar 2026 12:00:07 GMT"},
		{"anthropic", llmtest.Reply{Status: 500, Text: "boom"}, "api_error", "boom", ""},
		{"anthropic", llmtest.Reply{Status: 401}, "authentication_error", "x-api-key", ""},
		{"openai", llmtest.Reply{Status: 429, RetryAfter: "0"}, "requests", "Rate limit", "0"},
		{"openai", llmtest.Reply{Status: 503}, "server_error", "overloaded", ""},
		{"openai", llmtest.Reply{Status: 400, Text: "bad schema"}, "invalid_request_error", "bad schema", ""},
		{"openai", llmtest.Reply{Status: 502, Raw: `{"error":{"message":"raw","type":"proxy"}}`}, "proxy", "raw", ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d/%s", tt.prov, tt.reply.Status, tt.wantType), func(t *testing.T) {
			srv := start(t, tt.prov, llmtest.Queue(tt.reply))
			res, got := post(t, srv.URL+endpoint[tt.prov], body(tt.prov, true, false))
			if res.StatusCode != tt.reply.Status {
				t.Errorf("status %d, want %d", res.StatusCode, tt.reply.Status)
			}
			if h := res.Header.Get("Retry-After"); h != tt.wantHeader {
				t.Errorf("Retry-After %q, want %q", h, tt.wantHeader)
			}
			typ, msg := errorOf(t, tt.prov, got)
			if typ != tt.wantType || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("error type %q message %q, want %q naming %q", typ, msg, tt.wantType, tt.wantMsg)
			}
		})
	}
}

// TestNonStreaming checks the single-object replies by their meaning (the
// golden test pins their bytes).
func TestNonStreaming(t *testing.T) {
	t.Run("openai", func(t *testing.T) {
		srv := start(t, "openai", llmtest.Queue(golden))
		_, got := post(t, srv.URL+endpoint["openai"], body("openai", false, false))
		var m struct {
			Object  string `json:"object"`
			Model   string `json:"model"`
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					Reasoning string  `json:"reasoning_content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				Prompt, Completion, Total int
			} `json:"usage"`
		}
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatal(err)
		}
		if m.Object != "chat.completion" || m.Model != "gpt-test" || len(m.Choices) != 1 {
			t.Fatalf("%s", got)
		}
		c := m.Choices[0]
		if c.Message.Content == nil || *c.Message.Content != golden.Text || c.Message.Reasoning != golden.Thinking ||
			c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 2 ||
			c.Message.ToolCalls[1].Function.Arguments != golden.ToolCalls[1].Arguments || c.Message.ToolCalls[1].ID == "" {
			t.Errorf("%s", got)
		}
		if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Stream || reqs[0].System != "sys" || reqs[0].LastUser != "hi" {
			t.Errorf("recorded %+v", reqs)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		srv := start(t, "anthropic", llmtest.Queue(golden))
		_, got := post(t, srv.URL+endpoint["anthropic"], body("anthropic", false, false))
		var m struct {
			Type    string `json:"type"`
			Model   string `json:"model"`
			Content []struct {
				Type, Text, Thinking, Signature, ID, Name string
				Input                                     json.RawMessage
			} `json:"content"`
			StopReason string `json:"stop_reason"`
			Usage      struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(got, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type != "message" || m.Model != "claude-test" || m.StopReason != "tool_use" || len(m.Content) != 4 ||
			m.Usage.InputTokens != 120 || m.Usage.OutputTokens != 45 {
			t.Fatalf("%s", got)
		}
		if m.Content[0].Type != "thinking" || m.Content[0].Signature == "" || m.Content[1].Text != golden.Text ||
			m.Content[3].Name != "read_file" || string(m.Content[3].Input) != golden.ToolCalls[1].Arguments {
			t.Errorf("%s", got)
		}
		if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Stream || reqs[0].System != "sys" || reqs[0].MaxTokens != 100 {
			t.Errorf("recorded %+v", reqs)
		}
	})
	t.Run("anthropic tool call with arguments that are not JSON", func(t *testing.T) {
		rec := &recordingTB{TB: t}
		srv := start(rec, "anthropic", llmtest.Queue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "x", Arguments: `{"cut":`}}}))
		res, _ := post(t, srv.URL+endpoint["anthropic"], body("anthropic", false, false))
		if res.StatusCode != 500 || len(rec.got()) != 1 {
			t.Errorf("status %d, test errors %q", res.StatusCode, rec.got())
		}
	})
}
