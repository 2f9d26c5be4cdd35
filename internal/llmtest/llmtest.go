// Package llmtest starts scripted model servers for tests. NewOpenAI and
// NewAnthropic serve the OpenAI chat completions and Anthropic Messages wire
// formats, streaming included (one flush per server-sent event), on a local
// httptest server; a Script decides the Reply to each request, and the
// server records every Request it received.
//
// The servers speak the providers' formats closely enough that the real
// LLM plugins, and the overseer binary configured with Server.URL as its
// base URL, cannot tell them from the real thing. No model is involved:
// every reply is what the test scripted.
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"
)

// Provider names, as recorded in Request.Provider.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// DefaultChunkSize is how many runes of text, thinking or tool arguments
// one streamed piece carries when Reply.ChunkSize is 0.
const DefaultChunkSize = 7

// created is the Unix time every OpenAI reply claims it was made at, fixed so
// that streamed bodies can be compared byte for byte.
const created = 1767225600 // 2026-01-01T00:00:00Z

// ToolCall is a tool call a Reply makes. Arguments is the JSON text of the
// arguments object, streamed in pieces as the servers do; it is sent as
// given, so a test may script a cut-off or malformed call. An empty ID is
// replaced by a made-up one in the provider's style.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Usage is what a reply reports it cost, in tokens.
type Usage struct {
	Input  int
	Output int
}

// Reply is one scripted answer. The zero Reply is a successful, empty answer
// that stops normally.
type Reply struct {
	// Text is the answer, streamed in pieces of ChunkSize runes.
	Text string
	// Thinking is the reasoning channel: OpenAI-compatible
	// "reasoning_content", or an Anthropic thinking block (with a
	// signature). It is sent before Text.
	Thinking string
	// ToolCalls are sent after Text, each with its arguments in pieces.
	ToolCalls []ToolCall
	// ChunkSize is the number of runes per streamed piece (0:
	// DefaultChunkSize).
	ChunkSize int
	// CutOff makes the reply stop at the token limit: finish_reason
	// "length", stop_reason "max_tokens".
	CutOff bool
	// Usage is the reported usage; nil estimates it from the lengths of the
	// request and the reply, about four bytes a token.
	Usage *Usage
	// Model is the model the reply names; empty repeats the request's.
	Model string
	// Status, when neither 0 nor 200, makes this an error reply with that
	// HTTP status and the provider's error body. Text, when set, is then the
	// error's message.
	Status int
	// RetryAfter is the Retry-After header of an error reply ("0", "1", an
	// HTTP date); empty sends none.
	RetryAfter string
	// Drop cuts the reply half-way: the first half of its events (at least
	// one; of a Raw or single-object body, the first half of its bytes) is
	// sent and flushed, then the connection is closed abruptly, without the
	// stream's terminator.
	Drop bool
	// Raw, when set, is sent verbatim as the response body instead of the
	// rendered reply: the event stream of a 200 (for malformed streams) or
	// the body of an error reply.
	Raw string
	// Delay is waited before the reply is sent (ended early when the client
	// gives up or the server closes).
	Delay time.Duration

	// fail, when set, is reported as a test error and answered with a 500.
	fail string
}

// Fail returns a Reply that records a test error with the formatted message
// and answers the request with HTTP 500 and that message. Scripts use it
// for requests that should not have come.
func Fail(format string, args ...any) Reply {
	return Reply{fail: fmt.Sprintf(format, args...)}
}

// Request is what a client sent, with the essentials decoded.
type Request struct {
	// Provider is ProviderOpenAI or ProviderAnthropic.
	Provider string
	// Body is the request body as received.
	Body json.RawMessage
	// Header is the request's header.
	Header http.Header
	// Model is the requested model.
	Model string
	// System is the system prompt: OpenAI's system (or developer) messages,
	// Anthropic's "system" text, text parts joined by newlines.
	System string
	// LastUser is the text of the last user turn, text parts joined by
	// newlines (Anthropic tool results are not text and are left out).
	LastUser string
	// Tools are the names of the tools offered, in order.
	Tools []string
	// MaxTokens is the reply limit asked for (OpenAI "max_tokens" or
	// "max_completion_tokens"); 0 when absent.
	MaxTokens int
	// Stream reports whether a streamed reply was asked for.
	Stream bool
	// StreamUsage reports OpenAI's stream_options.include_usage.
	StreamUsage bool
}

// Script decides the reply to each request. Next is called once per
// well-formed request, possibly from several goroutines at once.
type Script interface {
	Next(req Request) Reply
}

// Queue is a Script answering with replies in order. Once they are used up,
// every further request records a test error and gets HTTP 500.
func Queue(replies ...Reply) Script {
	return &queue{replies: replies}
}

type queue struct {
	mu      sync.Mutex
	replies []Reply
	n       int
}

func (q *queue) Next(Request) Reply {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.n++
	if len(q.replies) == 0 {
		return Fail("llmtest: script exhausted: request %d has no scripted reply", q.n)
	}
	r := q.replies[0]
	q.replies = q.replies[1:]
	return r
}

// Func is a Script that asks f, with n counting requests from 0. Calls of f
// are serialised, so f needs no locking of its own.
func Func(f func(n int, req Request) Reply) Script {
	return &funcScript{f: f}
}

type funcScript struct {
	mu sync.Mutex
	n  int
	f  func(int, Request) Reply
}

func (s *funcScript) Next(req Request) Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n++
	return s.f(n, req)
}

// Decision returns the text of a decision block as Overseer's supervised
// loop expects it at the end of a reply: v as JSON inside a fence tagged
// "decision". It panics when v cannot be encoded, which is a mistake in the
// test itself.
func Decision(v map[string]any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("llmtest: decision is not JSON: %v", err))
	}
	return "```decision\n" + string(bytes.TrimSpace(b.Bytes())) + "\n```"
}

// pieces splits s into pieces of n runes.
func pieces(s string, n int) []string {
	if n <= 0 {
		n = DefaultChunkSize
	}
	var out []string
	for s != "" {
		i, k := 0, 0
		for i < len(s) && k < n {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			k++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// estimate is about one token per four bytes, at least one.
func estimate(n int) int { return max(1, (n+3)/4) }

// usage is the reply's usage, estimated when not scripted.
func usage(req Request, rp Reply) Usage {
	if rp.Usage != nil {
		return *rp.Usage
	}
	out := len(rp.Text) + len(rp.Thinking)
	for _, tc := range rp.ToolCalls {
		out += len(tc.Name) + len(tc.Arguments)
	}
	return Usage{Input: estimate(len(req.Body)), Output: estimate(out)}
}

// model is the model the reply names.
func model(req Request, rp Reply) string {
	if rp.Model != "" {
		return rp.Model
	}
	return req.Model
}

// render turns wire values into JSON text, keeping the first error.
type render struct{ err error }

func (r *render) json(v any) string {
	b, err := encode(v)
	if err != nil && r.err == nil {
		r.err = err
	}
	return string(b)
}
