package openai

import (
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

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/plugin"
	"github.com/overseer-dev/overseer/plugins/llm/retry"
)

// reply is one scripted answer of the test server.
type reply struct {
	status int
	header map[string]string
	file   string // testdata stream sent as the body, byte for byte
	body   string
}

// script is an OpenAI-compatible server that answers with the scripted
// replies in order and records the requests it got.
type script struct {
	t       *testing.T
	mu      sync.Mutex
	replies []reply
	got     []map[string]any
	auth    []string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, "wrong endpoint "+r.URL.Path, http.StatusNotFound)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.got = append(s.got, body)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
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
		w.WriteHeader(rp.status)
		io.WriteString(w, rp.body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	b := []byte(rp.body)
	if rp.file != "" {
		var err error
		if b, err = os.ReadFile(filepath.Join("testdata", rp.file)); err != nil {
			s.t.Error(err)
		}
	}
	// send in small pieces so the client must reassemble across reads
	fl, _ := w.(http.Flusher)
	for len(b) > 0 {
		n := min(len(b), 37)
		w.Write(b[:n])
		if fl != nil {
			fl.Flush()
		}
		b = b[n:]
	}
}

func (s *script) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// sleeps records retry waits instead of sleeping.
type sleeps struct{ waits []time.Duration }

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func newClient(t *testing.T, replies []reply, cfgJSON string) (*Client, *script, *sleeps) {
	t.Helper()
	sc := &script{t: t, replies: replies}
	srv := httptest.NewServer(sc)
	t.Cleanup(srv.Close)
	if cfgJSON == "" {
		cfgJSON = `{"model":"gpt-4o-mini","api_key":"sk-test","prices":{"gpt-4o*":{"input_per_mtok":2,"output_per_mtok":8}}}`
	}
	cfg, err := ParseConfig(json.RawMessage(cfgJSON))
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseURL = srv.URL + "/v1"
	sl := &sleeps{}
	c, err := New(cfg, WithSleeper(sl), WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return c, sc, sl
}

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
			wantStop:  "stop",
			wantUsage: plugin.Usage{InputTokens: 1000, OutputTokens: 500, CostUSD: 0.006},
		},
		{
			name:    "tool calls as index-keyed fragments, interleaved",
			replies: []reply{{file: "tools_indexed.sse"}},
			wantCalls: []plugin.ToolCall{
				{ID: "call_abc", Name: "read_file", Arguments: json.RawMessage(`{"path": "a.txt"}`)},
				{ID: "call_def", Name: "bash", Arguments: json.RawMessage(`{"command":"ls -l"}`)},
			},
			wantStop: "tool_calls",
		},
		{
			name:     "whole tool calls without index or id",
			replies:  []reply{{file: "tools_whole_noid.sse"}},
			wantText: "Let me look.",
			wantCalls: []plugin.ToolCall{
				{ID: "call_0", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
				{ID: "call_1", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)},
			},
			wantStop:  "tool_calls",
			wantUsage: plugin.Usage{InputTokens: 20, OutputTokens: 10, CostUSD: 0.00012}, // priced as the configured model
		},
		{
			name:    "same index, distinct ids, object arguments, CRLF",
			replies: []reply{{file: "tools_sameindex_objects.sse"}},
			wantCalls: []plugin.ToolCall{
				{ID: "a1", Name: "read_file", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
				{ID: "b2", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)},
			},
			wantStop: "tool_calls",
		},
		{
			name:      "cut off at max tokens",
			replies:   []reply{{file: "truncated.sse"}},
			wantText:  "The answer is long and",
			wantStop:  "length",
			truncated: true,
		},
		{
			name:      "reasoning channel and no [DONE]",
			replies:   []reply{{file: "thinking_nodone.sse"}},
			wantText:  "ok",
			wantThink: "thinking...",
			wantStop:  "stop",
		},
		{
			name: "429 with Retry-After then success",
			replies: []reply{
				{status: 429, header: map[string]string{"Retry-After": "3"}, body: `{"error":{"message":"rate limited"}}`},
				{file: "text.sse"},
			},
			wantText:  "Hello, world",
			wantStop:  "stop",
			wantUsage: plugin.Usage{InputTokens: 1000, OutputTokens: 500, CostUSD: 0.006},
			wantWaits: []time.Duration{3 * time.Second},
		},
		{
			name: "503 and 502 back off exponentially",
			replies: []reply{
				{status: 503, body: "unavailable"},
				{status: 502, body: "bad gateway"},
				{file: "truncated.sse"},
			},
			wantText:  "The answer is long and",
			wantStop:  "length",
			truncated: true,
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second},
		},
		{
			name: "stream cut before anything shown is retried",
			replies: []reply{
				{body: "data: {\"model\":\"m\",\"choices\":[]}\n\n"},
				{file: "text.sse"},
			},
			wantText:  "Hello, world",
			wantStop:  "stop",
			wantUsage: plugin.Usage{InputTokens: 1000, OutputTokens: 500, CostUSD: 0.006},
			wantWaits: []time.Duration{500 * time.Millisecond},
		},
		{
			name: "retries exhausted",
			replies: []reply{
				{status: 503}, {status: 503}, {status: 503}, {status: 503},
			},
			wantWaits: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second},
			wantErr:   retry.ErrExhausted,
		},
		{
			name:    "400 is not retried",
			replies: []reply{{status: 400, body: `{"error":{"message":"bad request"}}`}},
			wantErr: &retry.StatusError{},
		},
		{
			name:      "Retry-After beyond max_delay ends retries",
			replies:   []reply{{status: 429, header: map[string]string{"Retry-After": "3600"}}},
			wantErr:   retry.ErrExhausted,
			wantWaits: nil,
		},
		{
			name:    "text shown then stream cut is not retried",
			replies: []reply{{file: "incomplete.sse"}},
			wantErr: ErrIncompleteStream,
		},
		{
			name:    "tool call cut off at max tokens",
			replies: []reply{{file: "tool_cut.sse"}},
			wantErr: ErrBadToolCall,
		},
		{
			name:    "error inside the stream",
			replies: []reply{{file: "stream_error.sse"}},
			wantErr: ErrServer,
		},
		{
			name:    "malformed chunk",
			replies: []reply{{file: "bad_chunk.sse"}},
			wantErr: ErrBadChunk,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, sc, sl := newClient(t, tt.replies, "")
			var streamed strings.Builder
			resp, err := c.Stream(t.Context(), plugin.Request{
				Purpose: plugin.PurposeDecide, System: "be careful",
				Messages: []plugin.Message{{Role: plugin.RoleUser, Content: "hi"}},
			}, func(d plugin.Delta) { streamed.WriteString(d.Text) })
			if tt.wantErr != nil {
				var se *retry.StatusError
				if _, isStatus := tt.wantErr.(*retry.StatusError); isStatus {
					if !errors.As(err, &se) {
						t.Fatalf("err = %v, want a StatusError", err)
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
			if resp.Thinking != tt.wantThink {
				t.Errorf("thinking = %q, want %q", resp.Thinking, tt.wantThink)
			}
			if resp.StopReason != tt.wantStop || resp.Truncated != tt.truncated {
				t.Errorf("stop = %q truncated=%v, want %q %v", resp.StopReason, resp.Truncated, tt.wantStop, tt.truncated)
			}
			if len(resp.ToolCalls) != len(tt.wantCalls) {
				t.Fatalf("calls = %+v, want %+v", resp.ToolCalls, tt.wantCalls)
			}
			for i, w := range tt.wantCalls {
				g := resp.ToolCalls[i]
				if g.ID != w.ID || g.Name != w.Name || !jsonEqual(t, g.Arguments, w.Arguments) {
					t.Errorf("call %d = %s %s %s, want %s %s %s", i, g.ID, g.Name, g.Arguments, w.ID, w.Name, w.Arguments)
				}
			}
			if resp.Usage.InputTokens != tt.wantUsage.InputTokens || resp.Usage.OutputTokens != tt.wantUsage.OutputTokens ||
				abs(resp.Usage.CostUSD-tt.wantUsage.CostUSD) > 1e-12 {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tt.wantUsage)
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
	c, sc, _ := newClient(t, []reply{{file: "text.sse"}}, "")
	_, err := c.Complete(t.Context(), plugin.Request{
		Purpose: plugin.PurposeReflect, System: "sys", MaxTokens: 77,
		Messages: []plugin.Message{
			{Role: plugin.RoleUser, Content: "list files"},
			{Role: plugin.RoleAssistant, ToolCalls: []plugin.ToolCall{{ID: "c1", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}},
			{Role: plugin.RoleTool, ToolCallID: "c1", Content: "a.txt"},
		},
		Tools: []plugin.ToolSpec{{Name: "bash", Description: "run", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := sc.got[0]
	want := `{"max_tokens":77,"messages":[{"content":"sys","role":"system"},{"content":"list files","role":"user"},` +
		`{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"command\":\"ls\"}","name":"bash"},"id":"c1","type":"function"}]},` +
		`{"content":"a.txt","role":"tool","tool_call_id":"c1"}],"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},` +
		`"tools":[{"function":{"description":"run","name":"bash","parameters":{"properties":{"command":{"type":"string"}},"type":"object"}},"type":"function"}]}`
	gb, _ := json.Marshal(got)
	if string(gb) != want {
		t.Errorf("request body\n got %s\nwant %s", gb, want)
	}
	if sc.auth[0] != "Bearer sk-test" {
		t.Errorf("Authorization = %q", sc.auth[0])
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, sc, _ := newClient(t, []reply{{file: "text.sse"}}, "")
			if _, err := c.Complete(t.Context(), tt.req); err == nil {
				t.Fatal("want an error")
			}
			if sc.requests() != 0 {
				t.Error("a bad request was sent")
			}
		})
	}
}

func TestCancelDuringRetryWait(t *testing.T) {
	sc := &script{t: t, replies: []reply{{status: 503}, {file: "text.sse"}}}
	srv := httptest.NewServer(sc)
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	c, err := New(Config{Model: "m", BaseURL: srv.URL + "/v1"}, WithSleeper(sleeperFunc(func(context.Context, time.Duration) error {
		cancel()
		return context.Canceled
	})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(ctx, plugin.Request{Messages: []plugin.Message{{Role: plugin.RoleUser, Content: "x"}}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if sc.requests() != 1 {
		t.Errorf("requests = %d, want 1", sc.requests())
	}
}

type sleeperFunc func(context.Context, time.Duration) error

func (f sleeperFunc) Sleep(ctx context.Context, d time.Duration) error { return f(ctx, d) }

func TestConfig(t *testing.T) {
	tests := []struct {
		name, cfg string
		wantErr   bool
	}{
		{"minimal", `{"model":"llama3","base_url":"http://127.0.0.1:11434/v1"}`, false},
		{"all fields", `{"model":"m","api_key":"k","max_tokens":10,"max_tokens_field":"max_completion_tokens","temperature":0.2,"stream_usage":false,"headers":{"X":"y"},"timeout":"30s","retry":{"max_attempts":2,"base_delay":"1s","max_delay":"5s"},"prices":{"m":{"input_per_mtok":1,"output_per_mtok":2}}}`, false},
		{"unknown field", `{"model":"m","modle":"x"}`, true},
		{"missing model", `{"base_url":"http://x"}`, true},
		{"empty", ``, true},
		{"trailing data", `{"model":"m"} {}`, true},
		{"bad url", `{"model":"m","base_url":"ftp://x"}`, true},
		{"bad max_tokens_field", `{"model":"m","max_tokens_field":"tokens"}`, true},
		{"bad retry delay", `{"model":"m","retry":{"base_delay":"soon"}}`, true},
		{"negative price", `{"model":"m","prices":{"m":{"input_per_mtok":-1}}}`, true},
		{"missing key env", `{"model":"m","api_key_env":"OVERSEER_TEST_SURELY_UNSET_KEY"}`, true},
		{"bad timeout", `{"model":"m","timeout":"-1s"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plugin.New("llm.openai", json.RawMessage(tt.cfg))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Errorf("err = %v, want ErrConfig", err)
			}
		})
	}
}

func TestMaxCompletionTokensField(t *testing.T) {
	c, sc, _ := newClient(t, []reply{{file: "text.sse"}}, `{"model":"o3","max_tokens_field":"max_completion_tokens","stream_usage":false}`)
	if _, err := c.Complete(t.Context(), plugin.Request{Messages: []plugin.Message{{Role: plugin.RoleUser, Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if v, ok := sc.got[0]["max_completion_tokens"]; !ok || v.(float64) != 4096 {
		t.Errorf("max_completion_tokens = %v", v)
	}
	if _, ok := sc.got[0]["stream_options"]; ok {
		t.Error("stream_options sent though stream_usage is false")
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
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

// TestRetryAfterDateOnFakeClock: a 503 whose Retry-After is an HTTP date is
// waited out on the injected clock, not in real time.
func TestRetryAfterDateOnFakeClock(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	sc := &script{t: t, replies: []reply{
		{status: 503, header: map[string]string{"Retry-After": start.Add(20 * time.Second).Format(http.TimeFormat)}},
		{file: "text.sse"},
	}}
	srv := httptest.NewServer(sc)
	defer srv.Close()
	c, err := New(Config{Model: "m", BaseURL: srv.URL + "/v1"}, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		resp plugin.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Complete(t.Context(), plugin.Request{Messages: []plugin.Message{{Role: plugin.RoleUser, Content: "x"}}})
		done <- result{resp, err}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for clk.Waiters() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("client never waited")
		}
		time.Sleep(100 * time.Microsecond)
	}
	clk.Advance(19 * time.Second)
	if sc.requests() != 1 {
		t.Fatalf("retried after 19s of a 20s Retry-After")
	}
	clk.Advance(time.Second)
	r := <-done
	if r.err != nil || r.resp.Text != "Hello, world" || sc.requests() != 2 {
		t.Fatalf("resp %q err %v requests %d", r.resp.Text, r.err, sc.requests())
	}
}
