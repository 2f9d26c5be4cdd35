// Package openai is an LLM plugin for OpenAI-compatible chat completions
// servers: OpenAI itself, Ollama, vLLM, the llama.cpp server and others. It
// is a thin client of its own that always streams (server-sent events), so it
// can accept the different ways compatible servers stream tool calls.
// It registers as "llm.openai".
package openai

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
)

func init() {
	plugin.Register(plugin.Info{ID: "llm.openai", New: func(raw json.RawMessage) (any, error) {
		cfg, err := ParseConfig(raw)
		if err != nil {
			return nil, err
		}
		return New(cfg)
	}})
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("openai: bad configuration")

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures one model on one server.
type Config struct {
	BaseURL        string            `json:"base_url,omitempty"`         // e.g. http://127.0.0.1:11434/v1 for Ollama
	Model          string            `json:"model"`                      // required
	APIKey         string            `json:"api_key,omitempty"`          // prefer api_key_env
	APIKeyEnv      string            `json:"api_key_env,omitempty"`      // environment variable holding the key
	MaxTokens      int               `json:"max_tokens,omitempty"`       // default reply limit, 4096
	MaxTokensField string            `json:"max_tokens_field,omitempty"` // "max_tokens" (default) or "max_completion_tokens"
	Temperature    *float64          `json:"temperature,omitempty"`
	StreamUsage    *bool             `json:"stream_usage,omitempty"` // ask for usage in the stream, default true
	Headers        map[string]string `json:"headers,omitempty"`
	Timeout        string            `json:"timeout,omitempty"` // per attempt, default 10m
	Retry          retry.Config      `json:"retry,omitzero"`
	Prices         price.Table       `json:"prices,omitempty"`
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
	url        string
	cfg        Config
	apiKey     string
	timeout    time.Duration
	retry      retry.Policy
	httpClient *http.Client
	now        func() time.Time
}

var (
	_ plugin.LLM         = (*Client)(nil)
	_ plugin.LLMStreamer = (*Client)(nil)
)

// Option adjusts a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.httpClient = h } }

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
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if !strings.HasPrefix(cfg.BaseURL, "http://") && !strings.HasPrefix(cfg.BaseURL, "https://") {
		return nil, fmt.Errorf("%w: base_url %q is not an http(s) URL", ErrConfig, cfg.BaseURL)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("%w: negative max_tokens", ErrConfig)
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = 4096
	}
	switch cfg.MaxTokensField {
	case "":
		cfg.MaxTokensField = "max_tokens"
	case "max_tokens", "max_completion_tokens":
	default:
		return nil, fmt.Errorf("%w: max_tokens_field %q", ErrConfig, cfg.MaxTokensField)
	}
	if err := cfg.Prices.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	pol, err := cfg.Retry.Compile()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c := &Client{
		url: strings.TrimSuffix(cfg.BaseURL, "/") + "/chat/completions",
		cfg: cfg, apiKey: cfg.APIKey, timeout: 10 * time.Minute, retry: pol,
		httpClient: http.DefaultClient, now: time.Now,
	}
	if cfg.APIKeyEnv != "" {
		if c.apiKey = os.Getenv(cfg.APIKeyEnv); c.apiKey == "" {
			return nil, fmt.Errorf("%w: environment variable %s is empty", ErrConfig, cfg.APIKeyEnv)
		}
	}
	if cfg.Timeout != "" {
		if c.timeout, err = time.ParseDuration(cfg.Timeout); err != nil || c.timeout <= 0 {
			return nil, fmt.Errorf("%w: timeout %q", ErrConfig, cfg.Timeout)
		}
	}
	for _, o := range opts {
		o(c)
	}
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
	body, err := c.body(req)
	if err != nil {
		return plugin.Response{}, err
	}
	resp, err := retry.Do(ctx, c.retry, func(ctx context.Context) (plugin.Response, bool, error) {
		return c.attempt(ctx, body, onDelta)
	})
	if err != nil {
		return plugin.Response{}, fmt.Errorf("openai %s (%s): %w", c.cfg.Model, req.Purpose, err)
	}
	if resp.Model == "" {
		resp.Model = c.cfg.Model
	}
	resp.Usage = c.cfg.Prices.Apply(c.cfg.Model, resp.Usage)
	return resp, nil
}

func (c *Client) attempt(ctx context.Context, body []byte, onDelta func(plugin.Delta)) (plugin.Response, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return plugin.Response{}, false, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	if c.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	for k, v := range c.cfg.Headers {
		hr.Header.Set(k, v)
	}
	res, err := c.httpClient.Do(hr)
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
	if err != nil && !delivered && ctx.Err() == nil &&
		(errors.Is(err, ErrIncompleteStream) || !isDecodeError(err)) {
		// a connection cut before anything was shown: worth another try
		return out, false, &retry.TemporaryError{Err: err}
	}
	return out, delivered, err
}

func isDecodeError(err error) bool {
	for _, e := range []error{ErrBadChunk, ErrBadToolCall, ErrServer, ErrEventTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// wire types of the request
type (
	wireMsg struct {
		Role       string     `json:"role"`
		Content    *string    `json:"content"`
		ToolCalls  []wireCall `json:"tool_calls,omitempty"`
		ToolCallID string     `json:"tool_call_id,omitempty"`
	}
	wireCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	wireTool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
)

// body renders req as a chat completions request.
func (c *Client) body(req plugin.Request) ([]byte, error) {
	if req.MaxTokens < 0 {
		return nil, fmt.Errorf("openai: negative max_tokens")
	}
	var msgs []wireMsg
	if req.System != "" {
		s := req.System
		msgs = append(msgs, wireMsg{Role: "system", Content: &s})
	}
	for i, m := range req.Messages {
		content := m.Content
		w := wireMsg{Role: m.Role, Content: &content}
		switch m.Role {
		case plugin.RoleUser:
		case plugin.RoleAssistant:
			if content == "" && len(m.ToolCalls) > 0 {
				w.Content = nil
			}
			for _, tc := range m.ToolCalls {
				var wc wireCall
				wc.ID, wc.Type = tc.ID, "function"
				wc.Function.Name, wc.Function.Arguments = tc.Name, string(tc.Arguments)
				if len(tc.Arguments) == 0 {
					wc.Function.Arguments = "{}"
				}
				w.ToolCalls = append(w.ToolCalls, wc)
			}
		case plugin.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("openai: message %d: tool result without tool_call_id", i)
			}
			w.ToolCallID = m.ToolCallID
		default:
			return nil, fmt.Errorf("openai: message %d: unknown role %q", i, m.Role)
		}
		msgs = append(msgs, w)
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = c.cfg.MaxTokens
	}
	body := map[string]any{
		"model": c.cfg.Model, "messages": msgs, "stream": true,
		c.cfg.MaxTokensField: maxTokens,
	}
	if c.cfg.StreamUsage == nil || *c.cfg.StreamUsage {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	if c.cfg.Temperature != nil {
		body["temperature"] = *c.cfg.Temperature
	}
	if len(req.Tools) > 0 {
		var tools []wireTool
		for _, t := range req.Tools {
			var wt wireTool
			wt.Type = "function"
			wt.Function.Name, wt.Function.Description = t.Name, t.Description
			wt.Function.Parameters = t.InputSchema
			if len(wt.Function.Parameters) == 0 {
				wt.Function.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			tools = append(tools, wt)
		}
		body["tools"] = tools
	}
	return json.Marshal(body)
}
