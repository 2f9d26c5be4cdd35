// Package anthropic is an LLM plugin for Anthropic's Messages API, streamed
// over server-sent events. It speaks the wire format itself (the request
// body, the stream's events) rather than through the official SDK, which
// alone made up a third of Overseer's binary; the shared retry policy
// (backoff, Retry-After) applies. It registers as "llm.anthropic".
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/plugin"
	"github.com/overseer-dev/overseer/plugins/llm/price"
	"github.com/overseer-dev/overseer/plugins/llm/retry"
	"github.com/overseer-dev/overseer/plugins/llm/sse"
)

func init() {
	plugin.Register(plugin.Info{ID: "llm.anthropic", New: func(raw json.RawMessage) (any, error) {
		cfg, err := ParseConfig(raw)
		if err != nil {
			return nil, err
		}
		return New(cfg)
	}})
}

// Sentinel errors.
var (
	// ErrConfig wraps every configuration error.
	ErrConfig = errors.New("anthropic: bad configuration")
	// ErrIncompleteStream: the stream ended before the server said why it stopped.
	ErrIncompleteStream = errors.New("anthropic: stream ended before a stop reason")
	// ErrBadToolCall: a tool_use block whose input is not a JSON object.
	ErrBadToolCall = errors.New("anthropic: malformed tool call")
	// ErrBadEvent: a stream event that is not what its type says.
	ErrBadEvent = errors.New("anthropic: malformed stream event")
	// ErrServer: the server reported an error inside the stream.
	ErrServer = errors.New("anthropic: server error in stream")
)

// Config configures one model.
type Config struct {
	BaseURL   string            `json:"base_url,omitempty"` // default https://api.anthropic.com
	Model     string            `json:"model"`              // required
	APIKey    string            `json:"api_key,omitempty"`  // prefer api_key_env
	APIKeyEnv string            `json:"api_key_env,omitempty"`
	MaxTokens int               `json:"max_tokens,omitempty"` // default reply limit, 4096
	Headers   map[string]string `json:"headers,omitempty"`
	Timeout   string            `json:"timeout,omitempty"` // per attempt, default 10m
	Retry     retry.Config      `json:"retry,omitzero"`
	Prices    price.Table       `json:"prices,omitempty"`
}

// ParseConfig decodes raw strictly: unknown fields and trailing data are
// errors.
func ParseConfig(raw json.RawMessage) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(raw)) == 0 {
		return c, fmt.Errorf("%w: empty configuration (model is required)", ErrConfig)
	}
	if err := plugin.DecodeConfig(raw, &c); err != nil {
		return c, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return c, nil
}

// Client talks to one model. It is safe for concurrent use.
type Client struct {
	cfg     Config
	url     string
	apiKey  string
	timeout time.Duration
	retry   retry.Policy
	httpc   *http.Client
	now     func() time.Time
}

var (
	_ plugin.LLM         = (*Client)(nil)
	_ plugin.LLMStreamer = (*Client)(nil)
)

// Option adjusts a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.httpc = h } }

// WithSleeper sets how retries wait (tests pass a fake).
func WithSleeper(s retry.Sleeper) Option { return func(c *Client) { c.retry.Sleeper = s } }

// WithClock sets the clock retries wait on and read Retry-After dates by.
func WithClock(clk clock.Clock) Option {
	return func(c *Client) { c.retry.Sleeper, c.now = retry.ClockSleeper{Clock: clk}, clk.Now }
}

// New validates cfg and builds a Client.
func New(cfg Config, opts ...Option) (*Client, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, fmt.Errorf("%w: model is required", ErrConfig)
	}
	if cfg.BaseURL != "" && !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
		return nil, fmt.Errorf("%w: base_url %q is not an http(s) URL", ErrConfig, cfg.BaseURL)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("%w: negative max_tokens", ErrConfig)
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = 4096
	}
	if err := cfg.Prices.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	pol, err := cfg.Retry.Compile()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c := &Client{cfg: cfg, timeout: 10 * time.Minute, retry: pol, httpc: http.DefaultClient, now: time.Now}
	if cfg.Timeout != "" {
		if c.timeout, err = time.ParseDuration(cfg.Timeout); err != nil || c.timeout <= 0 {
			return nil, fmt.Errorf("%w: timeout %q", ErrConfig, cfg.Timeout)
		}
	}
	key := cfg.APIKey
	if cfg.APIKeyEnv != "" {
		if key = os.Getenv(cfg.APIKeyEnv); key == "" {
			return nil, fmt.Errorf("%w: environment variable %s is empty", ErrConfig, cfg.APIKeyEnv)
		}
	}
	for _, o := range opts {
		o(c)
	}
	base := cfg.BaseURL
	if base == "" {
		base = "https://api.anthropic.com"
	}
	c.url, c.apiKey = strings.TrimSuffix(base, "/")+"/v1/messages", key
	return c, nil
}

// Model is the configured model name.
func (c *Client) Model() string { return c.cfg.Model }

// Complete sends req and returns the whole reply.
func (c *Client) Complete(ctx context.Context, req plugin.Request) (plugin.Response, error) {
	return c.Stream(ctx, req, nil)
}

// Stream sends req, calls onDelta (if not nil) for each piece of text as it
// arrives and returns the whole reply. Busy or unavailable servers are
// retried with backoff until the first piece has been delivered.
func (c *Client) Stream(ctx context.Context, req plugin.Request, onDelta func(plugin.Delta)) (plugin.Response, error) {
	params, err := c.params(req)
	if err != nil {
		return plugin.Response{}, err
	}
	body, err := json.Marshal(params)
	if err != nil {
		return plugin.Response{}, fmt.Errorf("anthropic: request: %w", err)
	}
	resp, err := retry.Do(ctx, c.retry, func(ctx context.Context) (plugin.Response, bool, error) {
		return c.attempt(ctx, body, onDelta)
	})
	if err != nil {
		return plugin.Response{}, fmt.Errorf("anthropic %s (%s): %w", c.cfg.Model, req.Purpose, err)
	}
	resp.Usage = c.cfg.Prices.Apply(c.cfg.Model, resp.Usage)
	return resp, nil
}

// apiVersion is the Messages API version the request body is written for.
const apiVersion = "2023-06-01"

func (c *Client) attempt(ctx context.Context, body []byte, onDelta func(plugin.Delta)) (plugin.Response, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return plugin.Response{}, false, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	hr.Header.Set("Anthropic-Version", apiVersion)
	if c.apiKey != "" {
		hr.Header.Set("X-Api-Key", c.apiKey)
	}
	for k, v := range c.cfg.Headers {
		hr.Header.Set(k, v)
	}
	res, err := c.httpc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return plugin.Response{}, false, err
		}
		return plugin.Response{}, false, &retry.TemporaryError{Err: err}
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return plugin.Response{}, false, &retry.StatusError{
			Status: res.StatusCode, Body: string(msg),
			RetryAfter: retry.ParseRetryAfter(res.Header.Get("Retry-After"), c.now()),
		}
	}
	out, delivered, err := decodeStream(res.Body, onDelta)
	if err != nil && !delivered && ctx.Err() == nil && retryable(err) {
		return out, false, &retry.TemporaryError{Err: err}
	}
	return out, delivered, err
}

// retryable reports whether a failed stream is worth another attempt (when
// nothing was shown yet): a cut connection, a garbled event or an end before
// the stop reason, and the server's own busy errors; not a refusal, a
// malformed tool call or an oversized event.
func retryable(err error) bool {
	var se *streamError
	switch {
	case errors.As(err, &se):
		switch se.Type {
		case "overloaded_error", "api_error", "rate_limit_error":
			return true
		}
		return false
	case errors.Is(err, ErrIncompleteStream), errors.Is(err, ErrBadEvent):
		return true
	case errors.Is(err, ErrBadToolCall), errors.Is(err, sse.ErrEventTooLarge):
		return false
	}
	return true // a read error of the connection
}

// streamError is an error event inside a 200 stream.
type streamError struct{ Type, Message string }

func (e *streamError) Error() string {
	return fmt.Sprintf("%s: %s: %s", ErrServer, e.Type, e.Message)
}
func (e *streamError) Unwrap() error { return ErrServer }

// The stream's events (https://docs.anthropic.com, "Streaming Messages").
type (
	wireUsage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	}
	wireEvent struct {
		Type    string `json:"type"`
		Message *struct {
			Model string    `json:"model"`
			Usage wireUsage `json:"usage"`
		} `json:"message"`
		Index        *int `json:"index"`
		ContentBlock *struct {
			Type     string          `json:"type"`
			Text     string          `json:"text"`
			Thinking string          `json:"thinking"`
			ID       string          `json:"id"`
			Name     string          `json:"name"`
			Input    json.RawMessage `json:"input"`
		} `json:"content_block"`
		Delta *struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Thinking    string `json:"thinking"`
			PartialJSON string `json:"partial_json"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
		Usage *wireUsage `json:"usage"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
)

// block is one content block as it is assembled.
type block struct {
	typ, id, name  string
	text, thinking strings.Builder
	startInput     json.RawMessage
	partial        strings.Builder
}

// maxBlocks caps the content blocks of one reply.
const maxBlocks = 1024

// decodeStream reads a whole Messages stream, calling onDelta for each piece
// of text or thinking. delivered reports whether onDelta was called.
func decodeStream(r io.Reader, onDelta func(plugin.Delta)) (resp plugin.Response, delivered bool, err error) {
	var blocks []*block
	stopped := false
	err = sse.Read(r, func(_, data string) error {
		var ev wireEvent
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("%w: %v", ErrBadEvent, err)
		}
		switch ev.Type {
		case "message_start":
			if ev.Message == nil {
				return fmt.Errorf("%w: message_start without a message", ErrBadEvent)
			}
			resp.Model = ev.Message.Model
			resp.Usage.InputTokens, resp.Usage.OutputTokens = ev.Message.Usage.InputTokens, ev.Message.Usage.OutputTokens
		case "content_block_start":
			if ev.Index == nil || *ev.Index != len(blocks) || ev.ContentBlock == nil || len(blocks) >= maxBlocks {
				return fmt.Errorf("%w: content_block_start out of order", ErrBadEvent)
			}
			cb := ev.ContentBlock
			b := &block{typ: cb.Type, id: cb.ID, name: cb.Name, startInput: cb.Input}
			b.text.WriteString(cb.Text)
			b.thinking.WriteString(cb.Thinking)
			blocks = append(blocks, b)
		case "content_block_delta":
			if ev.Index == nil || *ev.Index < 0 || *ev.Index >= len(blocks) || ev.Delta == nil {
				return fmt.Errorf("%w: content_block_delta for no block", ErrBadEvent)
			}
			b := blocks[*ev.Index]
			switch ev.Delta.Type {
			case "text_delta":
				if b.typ != "text" {
					return fmt.Errorf("%w: text_delta for a %s block", ErrBadEvent, b.typ)
				}
				b.text.WriteString(ev.Delta.Text)
				if ev.Delta.Text != "" && onDelta != nil {
					onDelta(plugin.Delta{Text: ev.Delta.Text})
					delivered = true
				}
			case "thinking_delta":
				if b.typ != "thinking" {
					return fmt.Errorf("%w: thinking_delta for a %s block", ErrBadEvent, b.typ)
				}
				b.thinking.WriteString(ev.Delta.Thinking)
				if ev.Delta.Thinking != "" && onDelta != nil {
					onDelta(plugin.Delta{Thinking: ev.Delta.Thinking})
					delivered = true
				}
			case "input_json_delta":
				b.partial.WriteString(ev.Delta.PartialJSON)
			}
		case "message_delta":
			if ev.Delta != nil && ev.Delta.StopReason != "" {
				resp.StopReason = ev.Delta.StopReason
				stopped = true
			}
			if ev.Usage != nil {
				if ev.Usage.InputTokens > 0 {
					resp.Usage.InputTokens = ev.Usage.InputTokens
				}
				resp.Usage.OutputTokens = ev.Usage.OutputTokens
			}
		case "error":
			se := &streamError{Type: "unknown_error"}
			if ev.Error != nil {
				se.Type, se.Message = ev.Error.Type, ev.Error.Message
			}
			return se
		}
		return nil // ping, content_block_stop, message_stop, and events added later
	})
	if err != nil && !errors.Is(err, io.EOF) {
		return plugin.Response{}, delivered, err
	}
	if !stopped {
		return plugin.Response{}, delivered, ErrIncompleteStream
	}
	resp.Truncated = resp.StopReason == "max_tokens"
	var text, thinking strings.Builder
	for _, b := range blocks {
		switch b.typ {
		case "text":
			text.WriteString(b.text.String())
		case "thinking":
			thinking.WriteString(b.thinking.String())
		case "tool_use":
			args := bytes.TrimSpace([]byte(b.partial.String()))
			if len(args) == 0 {
				args = bytes.TrimSpace(b.startInput)
			}
			if len(args) == 0 {
				args = []byte("{}")
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(args, &obj); err != nil || obj == nil || b.name == "" {
				return plugin.Response{}, delivered, fmt.Errorf("%w: %q", ErrBadToolCall, b.name)
			}
			resp.ToolCalls = append(resp.ToolCalls, plugin.ToolCall{ID: b.id, Name: b.name, Arguments: json.RawMessage(args)})
		}
	}
	resp.Text, resp.Thinking = text.String(), thinking.String()
	return resp, delivered, nil
}

// The request's wire types.
type (
	wireBlock struct {
		Type      string          `json:"type"`
		Text      *string         `json:"text,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   []wireBlock     `json:"content,omitempty"`
		IsError   *bool           `json:"is_error,omitempty"`
	}
	wireMessage struct {
		Role    string      `json:"role"`
		Content []wireBlock `json:"content"`
	}
	wireTool struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		InputSchema map[string]any `json:"input_schema"`
	}
	wireRequest struct {
		Model     string        `json:"model"`
		MaxTokens int           `json:"max_tokens"`
		System    []wireBlock   `json:"system,omitempty"`
		Messages  []wireMessage `json:"messages"`
		Tools     []wireTool    `json:"tools,omitempty"`
		Stream    bool          `json:"stream"`
	}
)

func textBlock(s string) wireBlock { return wireBlock{Type: "text", Text: &s} }

// params renders req as a Messages API request. Consecutive user and tool
// turns are merged into one user message, as the API requires tool results
// to follow the assistant turn that asked for them.
func (c *Client) params(req plugin.Request) (wireRequest, error) {
	if req.MaxTokens < 0 {
		return wireRequest{}, errors.New("anthropic: negative max_tokens")
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = c.cfg.MaxTokens
	}
	p := wireRequest{Model: c.cfg.Model, MaxTokens: maxTokens, Stream: true, Messages: []wireMessage{}}
	if req.System != "" {
		p.System = []wireBlock{textBlock(req.System)}
	}
	for i, m := range req.Messages {
		var blocks []wireBlock
		role := "user"
		switch m.Role {
		case plugin.RoleUser:
			blocks = append(blocks, textBlock(m.Content))
		case plugin.RoleTool:
			if m.ToolCallID == "" {
				return p, fmt.Errorf("anthropic: message %d: tool result without tool_call_id", i)
			}
			isErr := m.IsError
			blocks = append(blocks, wireBlock{Type: "tool_result", ToolUseID: m.ToolCallID,
				Content: []wireBlock{textBlock(m.Content)}, IsError: &isErr})
		case plugin.RoleAssistant:
			role = "assistant"
			if m.Content != "" {
				blocks = append(blocks, textBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				args := bytes.TrimSpace(tc.Arguments)
				if len(args) == 0 {
					args = []byte("{}")
				}
				if !json.Valid(args) {
					return p, fmt.Errorf("anthropic: message %d: tool call %s: arguments are not JSON", i, tc.Name)
				}
				blocks = append(blocks, wireBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: json.RawMessage(args)})
			}
		default:
			return p, fmt.Errorf("anthropic: message %d: unknown role %q", i, m.Role)
		}
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
			continue
		}
		p.Messages = append(p.Messages, wireMessage{Role: role, Content: blocks})
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			return p, fmt.Errorf("anthropic: tool %s: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return p, nil
}

// inputSchema checks a tool's JSON schema and returns it as the API takes
// it: an object schema ("type": "object" added when missing), "required"
// keeping only names.
func inputSchema(raw json.RawMessage) (map[string]any, error) {
	s := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		if s == nil {
			s = map[string]any{}
		}
	}
	if t, ok := s["type"]; ok && t != "object" {
		return nil, fmt.Errorf("input schema type %v, want object", t)
	}
	s["type"] = "object"
	if req, ok := s["required"]; ok {
		var names []string
		if list, ok := req.([]any); ok {
			for _, r := range list {
				if rs, ok := r.(string); ok {
					names = append(names, rs)
				}
			}
		}
		if len(names) == 0 {
			delete(s, "required")
		} else {
			s["required"] = names
		}
	}
	return s, nil
}
