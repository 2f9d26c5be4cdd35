package plugin

import (
	"context"
	"encoding/json"
)

// Purposes of a model call. A router may send each to a different model: the
// primary one to decide, a cheaper one to reflect or compress.
const (
	PurposeDecide   = "decide"
	PurposeReflect  = "reflect"
	PurposePlan     = "plan"
	PurposeCompress = "compress"
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of a conversation with a model. An assistant turn may
// carry the tool calls it made; a tool turn carries one call's result and the
// ID of the call it answers.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	IsError    bool       `json:"is_error,omitempty"`
}

// ToolCall is a tool call the model asked for. Arguments is a JSON object.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Usage is what one call cost: tokens as the server reported them and the
// cost estimated from the configured price table (0 when no price is known).
type Usage struct {
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:  u.InputTokens + o.InputTokens,
		OutputTokens: u.OutputTokens + o.OutputTokens,
		CostUSD:      u.CostUSD + o.CostUSD,
	}
}

// Request is one call to a model. Purpose is one of the Purpose constants;
// MaxTokens 0 means the plugin's configured default.
type Request struct {
	Purpose   string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
}

// Response is a model's complete reply. Truncated reports that the reply was
// cut off at the token limit; StopReason is the server's own word for why it
// stopped. Model names the model that answered.
type Response struct {
	Text       string
	Thinking   string // a reasoning channel, when the server streams one apart
	ToolCalls  []ToolCall
	Usage      Usage
	StopReason string
	Truncated  bool
	Model      string
}

// Delta is a piece of a reply as it streams in: answer text or, for servers
// that stream a reasoning channel apart, thinking.
type Delta struct {
	Text     string
	Thinking string
}

// LLM completes a request. It infers; it never decides whether anything may
// run.
type LLM interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// LLMStreamer is the optional ability to stream a reply: onDelta is called,
// on the caller's goroutine, for each piece of text as it arrives, and the
// complete Response is returned at the end.
type LLMStreamer interface {
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
}

// Downgrader is an optional ability of an LLM: switch every later call to
// a cheaper model (a budget cap's downgrade). It reports whether there was
// a cheaper model to switch to.
type Downgrader interface {
	Downgrade() bool
}
