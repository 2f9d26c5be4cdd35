// Package anthropic is an LLM plugin for Anthropic's Messages API, streamed
// over server-sent events through the official SDK. The SDK's own retries are
// off: the shared retry policy (backoff, Retry-After) applies instead. It
// registers as "llm.anthropic".
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/plugin"
	"github.com/overseer-dev/overseer/plugins/llm/price"
	"github.com/overseer-dev/overseer/plugins/llm/retry"
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
	timeout time.Duration
	retry   retry.Policy
	api     sdk.Client
	httpc   option.HTTPClient
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
	ropts := []option.RequestOption{option.WithMaxRetries(0), option.WithHTTPClient(c.httpc)}
	if key != "" {
		ropts = append(ropts, option.WithAPIKey(key))
	}
	if cfg.BaseURL != "" {
		ropts = append(ropts, option.WithBaseURL(cfg.BaseURL))
	}
	for k, v := range cfg.Headers {
		ropts = append(ropts, option.WithHeader(k, v))
	}
	c.api = sdk.NewClient(ropts...)
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
	resp, err := retry.Do(ctx, c.retry, func(ctx context.Context) (plugin.Response, bool, error) {
		return c.attempt(ctx, params, onDelta)
	})
	if err != nil {
		return plugin.Response{}, fmt.Errorf("anthropic %s (%s): %w", c.cfg.Model, req.Purpose, err)
	}
	resp.Usage = c.cfg.Prices.Apply(c.cfg.Model, resp.Usage)
	return resp, nil
}

func (c *Client) attempt(ctx context.Context, params sdk.MessageNewParams, onDelta func(plugin.Delta)) (plugin.Response, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	stream := c.api.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var msg sdk.Message
	delivered := false
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return plugin.Response{}, delivered, fmt.Errorf("anthropic: stream: %w", err)
		}
		if ev.Type == "content_block_delta" && onDelta != nil {
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text != "" {
					onDelta(plugin.Delta{Text: ev.Delta.Text})
					delivered = true
				}
			case "thinking_delta":
				if ev.Delta.Thinking != "" {
					onDelta(plugin.Delta{Thinking: ev.Delta.Thinking})
					delivered = true
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		return plugin.Response{}, delivered, c.classify(ctx, err)
	}
	if msg.StopReason == "" {
		err := error(ErrIncompleteStream)
		if !delivered {
			err = &retry.TemporaryError{Err: err}
		}
		return plugin.Response{}, delivered, err
	}
	out, err := convert(msg)
	return out, delivered, err
}

// classify turns an SDK error into the shared retry errors.
func (c *Client) classify(ctx context.Context, err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		if apiErr.StatusCode < 400 { // an error event inside a 200 stream
			switch string(apiErr.Type()) {
			case "overloaded_error", "api_error", "rate_limit_error":
				return &retry.TemporaryError{Err: err}
			}
			return err
		}
		se := &retry.StatusError{Status: apiErr.StatusCode, Body: apiErr.Error()}
		if apiErr.Response != nil {
			se.RetryAfter = retry.ParseRetryAfter(apiErr.Response.Header.Get("Retry-After"), c.now())
		}
		return se
	}
	if ctx.Err() != nil {
		return err
	}
	return &retry.TemporaryError{Err: err}
}

// convert turns the accumulated message into a Response.
func convert(msg sdk.Message) (plugin.Response, error) {
	r := plugin.Response{
		StopReason: string(msg.StopReason),
		Truncated:  msg.StopReason == sdk.StopReasonMaxTokens,
		Model:      string(msg.Model),
		Usage:      plugin.Usage{InputTokens: int(msg.Usage.InputTokens), OutputTokens: int(msg.Usage.OutputTokens)},
	}
	var text, thinking strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			thinking.WriteString(b.Thinking)
		case "tool_use":
			args := bytes.TrimSpace(b.Input)
			if len(args) == 0 {
				args = []byte("{}")
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(args, &obj); err != nil || obj == nil || b.Name == "" {
				return plugin.Response{}, fmt.Errorf("%w: %q", ErrBadToolCall, b.Name)
			}
			r.ToolCalls = append(r.ToolCalls, plugin.ToolCall{ID: b.ID, Name: b.Name, Arguments: json.RawMessage(args)})
		}
	}
	r.Text, r.Thinking = text.String(), thinking.String()
	return r, nil
}

// params renders req as Messages API parameters. Consecutive user and tool
// turns are merged into one user message, as the API requires tool results
// to follow the assistant turn that asked for them.
func (c *Client) params(req plugin.Request) (sdk.MessageNewParams, error) {
	if req.MaxTokens < 0 {
		return sdk.MessageNewParams{}, errors.New("anthropic: negative max_tokens")
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = c.cfg.MaxTokens
	}
	p := sdk.MessageNewParams{Model: sdk.Model(c.cfg.Model), MaxTokens: int64(maxTokens)}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for i, m := range req.Messages {
		var blocks []sdk.ContentBlockParamUnion
		role := sdk.MessageParamRoleUser
		switch m.Role {
		case plugin.RoleUser:
			blocks = append(blocks, sdk.NewTextBlock(m.Content))
		case plugin.RoleTool:
			if m.ToolCallID == "" {
				return p, fmt.Errorf("anthropic: message %d: tool result without tool_call_id", i)
			}
			blocks = append(blocks, sdk.NewToolResultBlock(m.ToolCallID, m.Content, m.IsError))
		case plugin.RoleAssistant:
			role = sdk.MessageParamRoleAssistant
			if m.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				args := tc.Arguments
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, args, tc.Name))
			}
		default:
			return p, fmt.Errorf("anthropic: message %d: unknown role %q", i, m.Role)
		}
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
			continue
		}
		p.Messages = append(p.Messages, sdk.MessageParam{Role: role, Content: blocks})
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			return p, fmt.Errorf("anthropic: tool %s: %w", t.Name, err)
		}
		tp := sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	return p, nil
}

// inputSchema splits a JSON schema into the SDK's fields.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	if len(bytes.TrimSpace(raw)) == 0 {
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, fmt.Errorf("input schema: %w", err)
	}
	if t, ok := m["type"]; ok && t != "object" {
		return s, fmt.Errorf("input schema type %v, want object", t)
	}
	s.Properties = m["properties"]
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if rs, ok := r.(string); ok {
				s.Required = append(s.Required, rs)
			}
		}
	}
	for k, v := range m {
		switch k {
		case "type", "properties", "required":
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s, nil
}
