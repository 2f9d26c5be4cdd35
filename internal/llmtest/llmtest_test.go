package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/llmtest"
	"github.com/overseer-dev/overseer/plugin"
	"github.com/overseer-dev/overseer/plugins/llm/anthropic"
	"github.com/overseer-dev/overseer/plugins/llm/openai"
	"github.com/overseer-dev/overseer/plugins/llm/price"
	"github.com/overseer-dev/overseer/plugins/llm/retry"
)

// model is the model every client is configured with; it has a price.
const model = "test-model"

var prices = price.Table{model: {InputPerMTok: 3, OutputPerMTok: 15}}

// streamer is what both plugin clients offer.
type streamer interface {
	plugin.LLM
	plugin.LLMStreamer
}

// sleeps records the waits of retries without waiting.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// provider is one wire format with the real plugin client that speaks it.
type provider struct {
	name   string
	start  func(testing.TB, llmtest.Script) *llmtest.Server
	client func(t testing.TB, s *llmtest.Server, opts ...any) streamer
	// the provider's words for why a reply stopped
	stop, length, tools string
}

var providers = []provider{
	{
		name: "openai", start: llmtest.NewOpenAI, stop: "stop", length: "length", tools: "tool_calls",
		client: func(t testing.TB, s *llmtest.Server, opts ...any) streamer {
			t.Helper()
			o := []openai.Option{openai.WithHTTPClient(s.Client())}
			for _, x := range opts {
				switch v := x.(type) {
				case retry.Sleeper:
					o = append(o, openai.WithSleeper(v))
				case clock.Clock:
					o = append(o, openai.WithClock(v))
				}
			}
			c, err := openai.New(openai.Config{BaseURL: s.URL, Model: model, APIKey: "sk-test", Prices: prices}, o...)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
	},
	{
		name: "anthropic", start: llmtest.NewAnthropic, stop: "end_turn", length: "max_tokens", tools: "tool_use",
		client: func(t testing.TB, s *llmtest.Server, opts ...any) streamer {
			t.Helper()
			o := []anthropic.Option{anthropic.WithHTTPClient(s.Client())}
			for _, x := range opts {
				switch v := x.(type) {
				case retry.Sleeper:
					o = append(o, anthropic.WithSleeper(v))
				case clock.Clock:
					o = append(o, anthropic.WithClock(v))
				}
			}
			c, err := anthropic.New(anthropic.Config{BaseURL: s.URL, Model: model, APIKey: "sk-ant-test", Prices: prices}, o...)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
	},
}

// request is a typical request of the supervised loop.
var request = plugin.Request{
	Purpose: plugin.PurposeDecide,
	System:  "You are supervised.",
	Messages: []plugin.Message{
		{Role: plugin.RoleUser, Content: "List the files."},
		{Role: plugin.RoleAssistant, Content: "Looking.", ToolCalls: []plugin.ToolCall{{ID: "c1", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}},
		{Role: plugin.RoleTool, ToolCallID: "c1", Content: "a.txt"},
		{Role: plugin.RoleUser, Content: "Now read a.txt."},
	},
	Tools:     []plugin.ToolSpec{{Name: "bash", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}, {Name: "read_file"}},
	MaxTokens: 321,
}

func cost(in, out int) float64 { return (float64(in)*3 + float64(out)*15) / 1e6 }

// deltas collects what a stream delivered.
type deltas struct {
	list []plugin.Delta
}

func (d *deltas) add(x plugin.Delta) { d.list = append(d.list, x) }

func (d *deltas) text() (text, thinking string) {
	var t, th strings.Builder
	for _, x := range d.list {
		t.WriteString(x.Text)
		th.WriteString(x.Thinking)
	}
	return t.String(), th.String()
}

// TestPlugins drives both real plugin clients through the scripted servers.
func TestPlugins(t *testing.T) {
	tests := []struct {
		name    string
		replies []llmtest.Reply
		// want, with StopReason one of "stop", "length", "tools" (mapped
		// to the provider's word)
		want       plugin.Response
		wantDeltas int // number of delta callbacks, -1: do not check
		wantWaits  []time.Duration
		wantErr    bool
		wantReqs   int
	}{
		{
			name:       "streamed text in pieces with usage and cost",
			replies:    []llmtest.Reply{{Text: "Hello, streaming world!", ChunkSize: 5, Usage: &llmtest.Usage{Input: 1000, Output: 500}}},
			want:       plugin.Response{Text: "Hello, streaming world!", StopReason: "stop", Usage: plugin.Usage{InputTokens: 1000, OutputTokens: 500, CostUSD: cost(1000, 500)}},
			wantDeltas: 5,
			wantReqs:   1,
		},
		{
			name:       "multibyte text is split on rune boundaries",
			replies:    []llmtest.Reply{{Text: "列出文件并读取内容", ChunkSize: 2, Usage: &llmtest.Usage{Input: 10, Output: 9}}},
			want:       plugin.Response{Text: "列出文件并读取内容", StopReason: "stop", Usage: plugin.Usage{InputTokens: 10, OutputTokens: 9, CostUSD: cost(10, 9)}},
			wantDeltas: 5,
			wantReqs:   1,
		},
		{
			name:       "thinking kept apart from text",
			replies:    []llmtest.Reply{{Thinking: "The user wants a file.", Text: "Reading it.", Usage: &llmtest.Usage{Input: 7, Output: 3}}},
			want:       plugin.Response{Thinking: "The user wants a file.", Text: "Reading it.", StopReason: "stop", Usage: plugin.Usage{InputTokens: 7, OutputTokens: 3, CostUSD: cost(7, 3)}},
			wantDeltas: 4 + 2,
			wantReqs:   1,
		},
		{
			name: "text and two tool calls",
			replies: []llmtest.Reply{{Text: "Reading.", ToolCalls: []llmtest.ToolCall{
				{ID: "id_read", Name: "read_file", Arguments: `{"path": "a.txt"}`},
				{ID: "id_ls", Name: "bash", Arguments: `{"command":"ls -l && echo <done>"}`},
			}, Usage: &llmtest.Usage{Input: 50, Output: 20}}},
			want: plugin.Response{Text: "Reading.", StopReason: "tools", ToolCalls: []plugin.ToolCall{
				{ID: "id_read", Name: "read_file", Arguments: json.RawMessage(`{"path": "a.txt"}`)},
				{ID: "id_ls", Name: "bash", Arguments: json.RawMessage(`{"command":"ls -l && echo <done>"}`)},
			}, Usage: plugin.Usage{InputTokens: 50, OutputTokens: 20, CostUSD: cost(50, 20)}},
			wantDeltas: 2,
			wantReqs:   1,
		},
		{
			name: "only a tool call, without arguments",
			replies: []llmtest.Reply{{ToolCalls: []llmtest.ToolCall{{ID: "only", Name: "list"}},
				Usage: &llmtest.Usage{Input: 5, Output: 2}}},
			want: plugin.Response{StopReason: "tools", ToolCalls: []plugin.ToolCall{{ID: "only", Name: "list", Arguments: json.RawMessage(`{}`)}},
				Usage: plugin.Usage{InputTokens: 5, OutputTokens: 2, CostUSD: cost(5, 2)}},
			wantDeltas: 0,
			wantReqs:   1,
		},
		{
			name:       "usage estimated when not scripted",
			replies:    []llmtest.Reply{{Text: "twelve bytes"}},
			want:       plugin.Response{Text: "twelve bytes", StopReason: "stop", Usage: plugin.Usage{InputTokens: -1, OutputTokens: 3}},
			wantDeltas: 2,
			wantReqs:   1,
		},
		{
			name:       "cut off at the token limit is truncated",
			replies:    []llmtest.Reply{{Text: "The answer is long and", CutOff: true, Usage: &llmtest.Usage{Input: 100, Output: 16}}},
			want:       plugin.Response{Text: "The answer is long and", StopReason: "length", Truncated: true, Usage: plugin.Usage{InputTokens: 100, OutputTokens: 16, CostUSD: cost(100, 16)}},
			wantDeltas: 4,
			wantReqs:   1,
		},
		{
			name: "429 with Retry-After then success",
			replies: []llmtest.Reply{
				{Status: http.StatusTooManyRequests, RetryAfter: "3"},
				{Text: "ok", Usage: &llmtest.Usage{Input: 1, Output: 1}},
			},
			want:       plugin.Response{Text: "ok", StopReason: "stop", Usage: plugin.Usage{InputTokens: 1, OutputTokens: 1, CostUSD: cost(1, 1)}},
			wantDeltas: 1,
			wantWaits:  []time.Duration{3 * time.Second},
			wantReqs:   2,
		},
		{
			name: "503 then success backs off",
			replies: []llmtest.Reply{
				{Status: http.StatusServiceUnavailable},
				{Status: http.StatusServiceUnavailable, RetryAfter: "0"},
				{Text: "ok", Usage: &llmtest.Usage{Input: 1, Output: 1}},
			},
			want:       plugin.Response{Text: "ok", StopReason: "stop", Usage: plugin.Usage{InputTokens: 1, OutputTokens: 1, CostUSD: cost(1, 1)}},
			wantDeltas: 1,
			wantWaits:  []time.Duration{500 * time.Millisecond, time.Second},
			wantReqs:   3,
		},
		{
			name:     "400 is not retried",
			replies:  []llmtest.Reply{{Status: http.StatusBadRequest, Text: "bad tool schema"}},
			wantErr:  true,
			wantReqs: 1,
		},
		{
			name:     "stream dropped after text was shown fails without a retry",
			replies:  []llmtest.Reply{{Text: "This reply will not finish.", Drop: true}},
			wantErr:  true,
			wantReqs: 1,
		},
	}
	for _, p := range providers {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				srv := p.start(t, llmtest.Queue(tt.replies...))
				sl := &sleeps{}
				c := p.client(t, srv, retry.Sleeper(sl))
				var d deltas
				resp, err := c.Stream(context.Background(), request, d.add)
				if n := len(srv.Requests()); n != tt.wantReqs {
					t.Errorf("server got %d requests, want %d", n, tt.wantReqs)
				}
				if got := sl.got(); !reflect.DeepEqual(got, tt.wantWaits) {
					t.Errorf("retry waits = %v, want %v", got, tt.wantWaits)
				}
				if tt.wantErr {
					if err == nil {
						t.Fatalf("no error; response %+v", resp)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				want := tt.want
				want.StopReason = map[string]string{"stop": p.stop, "length": p.length, "tools": p.tools}[want.StopReason]
				want.Model = model
				if want.Usage.InputTokens == -1 { // estimated from the request's size
					body := srv.Requests()[len(srv.Requests())-1].Body
					want.Usage.InputTokens = (len(body) + 3) / 4
					want.Usage.CostUSD = cost(want.Usage.InputTokens, want.Usage.OutputTokens)
				}
				if !reflect.DeepEqual(resp.ToolCalls, want.ToolCalls) {
					t.Errorf("tool calls = %s, want %s", calls(resp.ToolCalls), calls(want.ToolCalls))
				}
				resp.ToolCalls, want.ToolCalls = nil, nil
				if !reflect.DeepEqual(resp, want) {
					t.Errorf("response\n got %+v\nwant %+v", resp, want)
				}
				text, thinking := d.text()
				if text != want.Text || thinking != want.Thinking {
					t.Errorf("deltas gave text %q thinking %q", text, thinking)
				}
				for _, x := range d.list {
					if x.Text != "" && x.Thinking != "" {
						t.Errorf("delta mixes text and thinking: %+v", x)
					}
				}
				if tt.wantDeltas >= 0 && len(d.list) != tt.wantDeltas {
					t.Errorf("%d deltas, want %d: %+v", len(d.list), tt.wantDeltas, d.list)
				}
			})
		}
	}
}

func calls(cs []plugin.ToolCall) string {
	b, _ := json.Marshal(cs)
	return string(b)
}

// TestGeneratedToolCallIDs checks that calls scripted without an ID get
// distinct IDs in the provider's style.
func TestGeneratedToolCallIDs(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(t, llmtest.Queue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				{Name: "a", Arguments: `{}`}, {Name: "b", Arguments: `{"x":1}`},
			}}))
			resp, err := p.client(t, srv).Complete(context.Background(), request)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.ToolCalls) != 2 {
				t.Fatalf("calls = %s", calls(resp.ToolCalls))
			}
			prefix := map[string]string{"openai": "call_", "anthropic": "toolu_"}[p.name]
			a, b := resp.ToolCalls[0].ID, resp.ToolCalls[1].ID
			if a == b || !strings.HasPrefix(a, prefix) || !strings.HasPrefix(b, prefix) {
				t.Errorf("IDs %q and %q: want distinct, starting with %q", a, b, prefix)
			}
		})
	}
}

// TestDroppedBeforeAnythingShownIsRetried: a stream cut before the client
// showed anything is worth another attempt.
func TestDroppedBeforeAnythingShownIsRetried(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(t, llmtest.Queue(
				llmtest.Reply{Text: "lost", Drop: true},
				llmtest.Reply{Text: "second try", Usage: &llmtest.Usage{Input: 1, Output: 2}},
			))
			sl := &sleeps{}
			resp, err := p.client(t, srv, retry.Sleeper(sl)).Complete(context.Background(), request)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "second try" || len(srv.Requests()) != 2 || len(sl.got()) != 1 {
				t.Errorf("text %q after %d requests and waits %v", resp.Text, len(srv.Requests()), sl.got())
			}
		})
	}
}

// TestCutOffToolCall: a tool call cut off at the token limit must never come
// back as a complete, runnable call.
func TestCutOffToolCall(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(t, llmtest.Queue(llmtest.Reply{
				ToolCalls: []llmtest.ToolCall{{ID: "x", Name: "bash", Arguments: `{"command":"rm -rf /tmp/x && echo`}}, CutOff: true,
			}))
			resp, err := p.client(t, srv).Complete(context.Background(), request)
			switch {
			case err != nil:
				// the OpenAI plugin refuses it
			case !resp.Truncated:
				t.Errorf("a cut-off call came back as complete: %s", calls(resp.ToolCalls))
			default:
				// the Anthropic SDK empties the cut-off input to {}; the
				// reply is at least marked Truncated
				for _, c := range resp.ToolCalls {
					if strings.Contains(string(c.Arguments), "rm -rf") {
						t.Errorf("cut-off arguments passed on: %s", c.Arguments)
					}
				}
			}
			if p.name == "openai" && !errors.Is(err, openai.ErrBadToolCall) {
				t.Errorf("error %v, want ErrBadToolCall", err)
			}
		})
	}
}

// TestRawStreams sends malformed or unusual streams verbatim.
func TestRawStreams(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		script   llmtest.Script
		wantText string
		wantErr  error // nil: success; errAny: any error
	}{
		{
			name: "malformed chunk", provider: "openai",
			script:  llmtest.Queue(llmtest.Reply{Raw: "data: {not json\n\n"}),
			wantErr: openai.ErrBadChunk,
		},
		{
			name: "error inside the stream", provider: "openai",
			script:  llmtest.Queue(llmtest.Reply{Raw: "data: {\"error\":{\"message\":\"model overloaded\",\"type\":\"server_error\"}}\n\n"}),
			wantErr: openai.ErrServer,
		},
		{
			name: "no finish reason after text", provider: "openai",
			script:  llmtest.Queue(llmtest.Reply{Raw: "data: {\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"}}]}\n\n"}),
			wantErr: openai.ErrIncompleteStream,
		},
		{
			name: "malformed event is retried until attempts run out", provider: "anthropic",
			script: llmtest.Func(func(int, llmtest.Request) llmtest.Reply {
				return llmtest.Reply{Raw: "event: message_start\ndata: {not json\n\n"}
			}),
			wantErr: retry.ErrExhausted,
		},
		{
			name: "overloaded error event, then success", provider: "anthropic",
			script: llmtest.Queue(
				llmtest.Reply{Raw: "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"},
				llmtest.Reply{Text: "fine"},
			),
			wantText: "fine",
		},
		{
			name: "invalid_request_error event is final", provider: "anthropic",
			script:  llmtest.Queue(llmtest.Reply{Raw: "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"no\"}}\n\n"}),
			wantErr: errAny,
		},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.name, func(t *testing.T) {
			var p provider
			for _, x := range providers {
				if x.name == tt.provider {
					p = x
				}
			}
			srv := p.start(t, tt.script)
			var d deltas
			resp, err := p.client(t, srv, retry.Sleeper(&sleeps{})).Stream(context.Background(), request, d.add)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatal(err)
			case tt.wantErr == nil:
				if resp.Text != tt.wantText {
					t.Errorf("text %q, want %q", resp.Text, tt.wantText)
				}
			case err == nil:
				t.Fatalf("no error; response %+v", resp)
			case tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
		})
	}
}

var errAny = errors.New("any error")

// TestDroppedStreamDeliversFirstHalf checks that a dropped stream shows what
// came before the cut and then fails as a broken connection.
func TestDroppedStreamDeliversFirstHalf(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(t, llmtest.Queue(llmtest.Reply{Text: "abcdefghijklmnopqrstuvwxyz0123456789", ChunkSize: 4, Drop: true}))
			var d deltas
			_, err := p.client(t, srv).Stream(context.Background(), request, d.add)
			if err == nil {
				t.Fatal("a dropped stream succeeded")
			}
			text, _ := d.text()
			if text == "" || len(text) >= 36 || !strings.HasPrefix("abcdefghijklmnopqrstuvwxyz0123456789", text) {
				t.Errorf("before the cut the client showed %q", text)
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "EOF") {
				t.Errorf("error %v does not name the broken connection", err)
			}
		})
	}
}

// TestRetryAfterDate honours an HTTP-date Retry-After on a fake clock.
func TestRetryAfterDate(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			srv := p.start(t, llmtest.Queue(
				llmtest.Reply{Status: http.StatusTooManyRequests, RetryAfter: t0.Add(7 * time.Second).Format(http.TimeFormat)},
				llmtest.Reply{Text: "after the wait"},
			))
			c := p.client(t, srv, clock.Clock(clk))
			type result struct {
				resp plugin.Response
				err  error
			}
			done := make(chan result, 1)
			go func() {
				r, err := c.Complete(context.Background(), request)
				done <- result{r, err}
			}()
			for clk.Waiters() == 0 { // until the retry waits on the clock
				select {
				case r := <-done:
					t.Fatalf("finished without waiting: %+v, %v", r.resp, r.err)
				case <-time.After(time.Millisecond):
				}
			}
			clk.Advance(6 * time.Second)
			select {
			case r := <-done:
				t.Fatalf("retried before the server's date: %+v, %v", r.resp, r.err)
			case <-time.After(20 * time.Millisecond):
			}
			clk.Advance(time.Second)
			r := <-done
			if r.err != nil || r.resp.Text != "after the wait" {
				t.Fatalf("%+v, %v", r.resp, r.err)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

// TestRequestsRecorded checks the essentials decoded from what the real
// clients send.
func TestRequestsRecorded(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(t, llmtest.Queue(llmtest.Reply{Text: "ok"}))
			if _, err := p.client(t, srv).Complete(context.Background(), request); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			got := reqs[0]
			want := llmtest.Request{
				Provider: p.name, Model: model, System: "You are supervised.", LastUser: "Now read a.txt.",
				Tools: []string{"bash", "read_file"}, MaxTokens: 321, Stream: true, StreamUsage: p.name == "openai",
			}
			// for Anthropic the tool result and the next user text are one
			// user turn, whose text is the user's words only
			body, header := got.Body, got.Header
			got.Body, got.Header = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("request\n got %+v\nwant %+v", got, want)
			}
			if !json.Valid(body) || !strings.Contains(string(body), `"Now read a.txt."`) {
				t.Errorf("body %s", body)
			}
			key := map[string]string{"openai": header.Get("Authorization"), "anthropic": header.Get("X-Api-Key")}[p.name]
			if wantKey := map[string]string{"openai": "Bearer sk-test", "anthropic": "sk-ant-test"}[p.name]; key != wantKey {
				t.Errorf("key header %q, want %q", key, wantKey)
			}
		})
	}
}

// TestConcurrentRequests runs many streams at once against one server.
func TestConcurrentRequests(t *testing.T) {
	const n = 8
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			srv := p.start(t, llmtest.Func(func(_ int, req llmtest.Request) llmtest.Reply {
				return llmtest.Reply{Text: "echo: " + req.LastUser, ChunkSize: 3}
			}))
			c := p.client(t, srv)
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() {
					req := request
					req.Messages = []plugin.Message{{Role: plugin.RoleUser, Content: strings.Repeat("x", i+1)}}
					resp, err := c.Stream(context.Background(), req, func(plugin.Delta) {})
					if err == nil && resp.Text != "echo: "+strings.Repeat("x", i+1) {
						err = errors.New("wrong text " + resp.Text)
					}
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			if got := len(srv.Requests()); got != n {
				t.Errorf("%d requests recorded, want %d", got, n)
			}
		})
	}
}

// TestFuncCounts checks that Func numbers requests from 0 and that Fail
// answers 500.
func TestFuncCounts(t *testing.T) {
	var seen []int
	srv := llmtest.NewOpenAI(t, llmtest.Func(func(n int, _ llmtest.Request) llmtest.Reply {
		seen = append(seen, n)
		return llmtest.Reply{Text: "ok"}
	}))
	c := providers[0].client(t, srv)
	for range 3 {
		if _, err := c.Complete(context.Background(), request); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(seen, []int{0, 1, 2}) {
		t.Errorf("n = %v", seen)
	}
}

// recordingTB catches the test errors a server reports.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recordingTB) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

// TestScriptFailures checks that an exhausted queue and Fail both answer 500
// and report a test error.
func TestScriptFailures(t *testing.T) {
	tests := []struct {
		name   string
		script func() llmtest.Script
		want   string
	}{
		{"exhausted queue", func() llmtest.Script { return llmtest.Queue() }, "script exhausted"},
		{"Fail", func() llmtest.Script {
			return llmtest.Func(func(n int, _ llmtest.Request) llmtest.Reply { return llmtest.Fail("unexpected request %d", n) })
		}, "unexpected request 0"},
	}
	for _, p := range providers {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				rec := &recordingTB{TB: t}
				srv := p.start(rec, tt.script())
				_, err := p.client(t, srv).Complete(context.Background(), request)
				var se *retry.StatusError
				if !errors.As(err, &se) || se.Status != http.StatusInternalServerError || !strings.Contains(se.Body, tt.want) {
					t.Errorf("error %v, want HTTP 500 naming %q", err, tt.want)
				}
				if got := rec.got(); len(got) != 1 || !strings.Contains(got[0], tt.want) {
					t.Errorf("test errors %q, want one naming %q", got, tt.want)
				}
			})
		}
	}
}

// TestDelay checks that a delayed reply is abandoned when the client gives up
// and that closing the server does not wait for a delay to pass.
func TestDelay(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name+"/client gives up", func(t *testing.T) {
			srv := p.start(t, llmtest.Queue(llmtest.Reply{Delay: time.Hour, Text: "late"}))
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := p.client(t, srv).Complete(ctx, request)
				done <- err
			}()
			for len(srv.Requests()) == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("error %v, want context.Canceled", err)
			}
		})
		t.Run(p.name+"/server closes", func(t *testing.T) {
			done := make(chan error, 1)
			t.Run("inner", func(t *testing.T) {
				srv := p.start(t, llmtest.Queue(llmtest.Reply{Delay: time.Hour, Text: "late"}))
				c := p.client(t, srv, retry.Sleeper(&sleeps{}))
				go func() {
					_, err := c.Complete(context.Background(), request)
					done <- err
				}()
				for len(srv.Requests()) == 0 {
					time.Sleep(time.Millisecond)
				}
			}) // its cleanup closes the server while the reply waits
			if err := <-done; err == nil {
				t.Error("a reply cut by closing the server succeeded")
			}
		})
	}
}
