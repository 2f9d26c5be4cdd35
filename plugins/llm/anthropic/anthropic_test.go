package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/plugin"
	"github.com/overseer-dev/overseer/plugins/llm/retry"
)

type reply struct {
	status int
	header map[string]string
	file   string
	body   string
}

// script is a Messages API server answering with scripted replies in order.
type script struct {
	t       *testing.T
	mu      sync.Mutex
	replies []reply
	got     []map[string]any
	keys    []string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
		http.Error(w, "wrong endpoint "+r.URL.Path, http.StatusNotFound)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.got = append(s.got, body)
	s.keys = append(s.keys, r.Header.Get("X-Api-Key"))
	if len(s.replies) == 0 {
		http.Error(w, "script exhausted", http.StatusInternalServerError)
		return
	}
	rp := s.replies[0]
	s.replies = s.replies[1:]
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	if rp.status != 0 && rp.status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rp.status)
		io.WriteString(w, rp.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	b, err := os.ReadFile(filepath.Join("testdata", rp.file))
	if err != nil {
		s.t.Error(err)
	}
	fl, _ := w.(http.Flusher)
	for len(b) > 0 {
		n := min(len(b), 41)
		w.Write(b[:n])
		fl.Flush()
		b = b[n:]
	}
}

func (s *script) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

type sleeps struct{ waits []time.Duration }

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func newClient(t *testing.T, replies []reply) (*Client, *script, *sleeps) {
	t.Helper()
	sc := &script{t: t, replies: replies}
	srv := httptest.NewServer(sc)
	t.Cleanup(srv.Close)
	cfg, err := ParseConfig(json.RawMessage(`{"model":"claude-sonnet-4-5","api_key":"test-key","prices":{"claude-sonnet-4-5":{"input_per_mtok":3,"output_per_mtok":15}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseURL = srv.URL
	sl := &sleeps{}
	c, err := New(cfg, WithSleeper(sl), WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return c, sc, sl
}

// errAny accepts any error.
var errAny = errors.New("any error")

const rateLimited = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`

func TestStream(t *testing.T) {
	tests := []struct {
		name      string
		replies   []reply
		wantText  string
		wantThink string
		wantCalls []plugin.ToolCall
		wantStop  string
		truncated bool
		wantUsage plugin.Usage
		wantWaits []time.Duration
		wantErr   error
	}{
		{
			name:      "text with usage and cost",
			replies:   []reply{{file: "text.sse"}},
			wantText:  "Hello, world",
			wantStop:  "end_turn",
			wantUsage: plugin.Usage{InputTokens: 1000, OutputTokens: 500, CostUSD: 0.003 + 0.0075},
		},
		{
			name:      "thinking, text and streamed tool_use input",
			replies:   []reply{{file: "tool_use.sse"}},
			wantText:  "Reading.",
			wantThink: "I should read it.",
			wantCalls: []plugin.ToolCall{
				{ID: "toolu_01A", Name: "read_file", Arguments: json.RawMessage(`{"path": "a.txt"}`)},
				{ID: "toolu_01B", Name: "list", Arguments: json.RawMessage(`{}`)},
			},
			wantStop:  "tool_use",
			wantUsage: plugin.Usage{InputTokens: 1000, OutputTokens: 80, CostUSD: 0.003 + 0.0012},
		},
		{
			name:      "cut off at max_tokens",
			replies:   []reply{{file: "max_tokens.sse"}},
			wantText:  "The answer is long and",
			wantStop:  "max_tokens",
			truncated: true,
			wantUsage: plugin.Usage{InputTokens: 1000, OutputTokens: 16, CostUSD: 0.003 + 0.00024},
		},
		{
			name: "429 with retry-after then success",
			replies: []reply{
				{status: 429, header: map[string]string{"Retry-After": "4"}, body: rateLimited},
				{file: "text.sse"},
			},
			wantText:  "Hello, world",
			wantStop:  "end_turn",
			wantUsage: plugin.Usage{InputTokens: 1000, OutputTokens: 500, CostUSD: 0.003 + 0.0075},
			wantWaits: []time.Duration{4 * time.Second},
		},
		{
			name: "503 and 529 back off exponentially",
			replies: []reply{
				{status: 503, body: `{"type":"error","error":{"type":"api_error","message":"unavailable"}}`},
				{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
				{file: "max_tokens.sse"},
			},
			wantText:  "The answer is long and",
			wantStop:  "max_tokens",
			truncated: true,
			wantUsage: plugin.Usage{InputTokens: 1000, OutputTokens: 16, CostUSD: 0.003 + 0.00024},
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second},
		},
		{
			name:      "overloaded error event before any text is retried",
			replies:   []reply{{file: "overloaded.sse"}, {file: "text.sse"}},
			wantText:  "Hello, world",
			wantStop:  "end_turn",
			wantUsage: plugin.Usage{InputTokens: 1000, OutputTokens: 500, CostUSD: 0.003 + 0.0075},
			wantWaits: []time.Duration{500 * time.Millisecond},
		},
		{
			name:    "invalid_request_error event in the stream is not retried",
			replies: []reply{{file: "stream_invalid.sse"}},
			wantErr: errAny,
		},
		{
			name:    "400 is not retried",
			replies: []reply{{status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`}},
			wantErr: &retry.StatusError{},
		},
		{
			name:      "retries exhausted",
			replies:   []reply{{status: 503}, {status: 503}, {status: 503}, {status: 503}},
			wantErr:   retry.ErrExhausted,
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second},
		},
		{
			name:    "text shown then stream cut is not retried",
			replies: []reply{{file: "incomplete.sse"}},
			wantErr: ErrIncompleteStream,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, sc, sl := newClient(t, tt.replies)
			var streamed, thought strings.Builder
			resp, err := c.Stream(t.Context(), plugin.Request{
				Purpose: plugin.PurposeDecide, System: "be careful",
				Messages: []plugin.Message{{Role: plugin.RoleUser, Content: "hi"}},
			}, func(d plugin.Delta) { streamed.WriteString(d.Text); thought.WriteString(d.Thinking) })
			if tt.wantErr != nil {
				if _, isStatus := tt.wantErr.(*retry.StatusError); isStatus {
					var se *retry.StatusError
					if !errors.As(err, &se) {
						t.Fatalf("err = %v, want a StatusError", err)
					}
				} else if tt.wantErr == errAny {
					if err == nil {
						t.Fatal("want an error")
					}
				} else if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if !equalWaits(sl.waits, tt.wantWaits) {
					t.Errorf("waits = %v, want %v", sl.waits, tt.wantWaits)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tt.wantText || streamed.String() != tt.wantText {
				t.Errorf("text = %q, streamed %q, want %q", resp.Text, streamed.String(), tt.wantText)
			}
			if resp.Thinking != tt.wantThink || thought.String() != tt.wantThink {
				t.Errorf("thinking = %q, streamed %q, want %q", resp.Thinking, thought.String(), tt.wantThink)
			}
			if resp.StopReason != tt.wantStop || resp.Truncated != tt.truncated {
				t.Errorf("stop = %q truncated=%v, want %q %v", resp.StopReason, resp.Truncated, tt.wantStop, tt.truncated)
			}
			if len(resp.ToolCalls) != len(tt.wantCalls) {
				t.Fatalf("calls = %+v, want %+v", resp.ToolCalls, tt.wantCalls)
			}
			for i, w := range tt.wantCalls {
				g := resp.ToolCalls[i]
				if g.ID != w.ID || g.Name != w.Name || !jsonEqual(g.Arguments, w.Arguments) {
					t.Errorf("call %d = %s %s %s, want %s %s %s", i, g.ID, g.Name, g.Arguments, w.ID, w.Name, w.Arguments)
				}
			}
			u := resp.Usage
			if u.InputTokens != tt.wantUsage.InputTokens || u.OutputTokens != tt.wantUsage.OutputTokens ||
				abs(u.CostUSD-tt.wantUsage.CostUSD) > 1e-12 {
				t.Errorf("usage = %+v, want %+v", u, tt.wantUsage)
			}
			if !equalWaits(sl.waits, tt.wantWaits) {
				t.Errorf("waits = %v, want %v", sl.waits, tt.wantWaits)
			}
			if got, want := sc.requests(), len(tt.replies); got != want {
				t.Errorf("requests = %d, want %d", got, want)
			}
		})
	}
}

func TestRequestWireFormat(t *testing.T) {
	c, sc, _ := newClient(t, []reply{{file: "text.sse"}})
	_, err := c.Complete(t.Context(), plugin.Request{
		Purpose: plugin.PurposeDecide, System: "sys", MaxTokens: 77,
		Messages: []plugin.Message{
			{Role: plugin.RoleUser, Content: "read both"},
			{Role: plugin.RoleAssistant, Content: "ok", ToolCalls: []plugin.ToolCall{
				{ID: "t1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)},
				{ID: "t2", Name: "read_file", Arguments: json.RawMessage(`{"path":"b"}`)},
			}},
			{Role: plugin.RoleTool, ToolCallID: "t1", Content: "A"},
			{Role: plugin.RoleTool, ToolCallID: "t2", Content: "denied", IsError: true},
		},
		Tools: []plugin.ToolSpec{{Name: "read_file", Description: "read", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(sc.got[0])
	want := `{"max_tokens":77,"messages":[{"content":[{"text":"read both","type":"text"}],"role":"user"},` +
		`{"content":[{"text":"ok","type":"text"},{"id":"t1","input":{"path":"a"},"name":"read_file","type":"tool_use"},{"id":"t2","input":{"path":"b"},"name":"read_file","type":"tool_use"}],"role":"assistant"},` +
		`{"content":[{"content":[{"text":"A","type":"text"}],"is_error":false,"tool_use_id":"t1","type":"tool_result"},{"content":[{"text":"denied","type":"text"}],"is_error":true,"tool_use_id":"t2","type":"tool_result"}],"role":"user"}],` +
		`"model":"claude-sonnet-4-5","stream":true,"system":[{"text":"sys","type":"text"}],` +
		`"tools":[{"description":"read","input_schema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"name":"read_file"}]}`
	if string(got) != want {
		t.Errorf("request body\n got %s\nwant %s", got, want)
	}
	if sc.keys[0] != "test-key" {
		t.Errorf("x-api-key = %q", sc.keys[0])
	}
}

func TestRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		req  plugin.Request
	}{
		{"unknown role", plugin.Request{Messages: []plugin.Message{{Role: "system", Content: "x"}}}},
		{"tool result without id", plugin.Request{Messages: []plugin.Message{{Role: plugin.RoleTool, Content: "x"}}}},
		{"negative max tokens", plugin.Request{MaxTokens: -1}},
		{"non-object schema", plugin.Request{Tools: []plugin.ToolSpec{{Name: "x", InputSchema: json.RawMessage(`{"type":"string"}`)}}}},
		{"bad schema", plugin.Request{Tools: []plugin.ToolSpec{{Name: "x", InputSchema: json.RawMessage(`{`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, sc, _ := newClient(t, []reply{{file: "text.sse"}})
			if _, err := c.Complete(t.Context(), tt.req); err == nil {
				t.Fatal("want an error")
			}
			if sc.requests() != 0 {
				t.Error("a bad request was sent")
			}
		})
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name, cfg string
		wantErr   bool
	}{
		{"minimal", `{"model":"claude-haiku-4-5"}`, false},
		{"all fields", `{"model":"m","base_url":"http://127.0.0.1:1","api_key":"k","max_tokens":10,"headers":{"X":"y"},"timeout":"30s","retry":{"max_attempts":2},"prices":{"m":{"input_per_mtok":1,"output_per_mtok":2}}}`, false},
		{"unknown field", `{"model":"m","temperature":1}`, true},
		{"missing model", `{}`, true},
		{"empty", ``, true},
		{"bad url", `{"model":"m","base_url":"x"}`, true},
		{"bad retry", `{"model":"m","retry":{"max_attempts":-1}}`, true},
		{"missing key env", `{"model":"m","api_key_env":"OVERSEER_TEST_SURELY_UNSET_KEY"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plugin.New("llm.anthropic", json.RawMessage(tt.cfg))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Errorf("err = %v, want ErrConfig", err)
			}
		})
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func equalWaits(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// FuzzInputSchema checks that splitting any tool schema never panics and
// that an accepted schema renders as a JSON object of type "object".
func FuzzInputSchema(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		`{"type":"string"}`, `{"required":[1,"a"],"$defs":{}}`, `[]`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := inputSchema(raw)
		if err != nil {
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			return // values JSON cannot render are refused when sending
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil || m["type"] != "object" {
			t.Fatalf("schema %s rendered as %s", raw, b)
		}
	})
}

// FuzzDecodeStream feeds arbitrary streams to the event decoder: it must
// never panic, and every reply it accepts has a stop reason, streamed the
// text it returns, and carries only named tool calls whose arguments are a
// JSON object.
func FuzzDecodeStream(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, fn := range files {
		b, err := os.ReadFile(fn)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`data: {"type":"content_block_delta","index":5,"delta":{"type":"text_delta","text":"x"}}` + "\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var streamed strings.Builder
		resp, _, err := decodeStream(bytes.NewReader(in), func(d plugin.Delta) { streamed.WriteString(d.Text) })
		if err != nil {
			return
		}
		if resp.StopReason == "" {
			t.Fatal("accepted a reply without a stop reason")
		}
		if streamed.String() != resp.Text {
			t.Fatalf("streamed %q but reply text is %q", streamed.String(), resp.Text)
		}
		for _, c := range resp.ToolCalls {
			var obj map[string]any
			if c.Name == "" || json.Unmarshal(c.Arguments, &obj) != nil || obj == nil {
				t.Fatalf("accepted a bad tool call %+v", c)
			}
		}
	})
}
