package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/overseer-dev/overseer/plugin"
	"github.com/overseer-dev/overseer/plugins/llm/sse"
)

// Sentinel errors of the stream decoder.
var (
	// ErrIncompleteStream: the stream ended before the server said why it stopped.
	ErrIncompleteStream = errors.New("openai: stream ended before a finish reason")
	// ErrBadChunk: a data line was not a chat completion chunk.
	ErrBadChunk = errors.New("openai: malformed stream chunk")
	// ErrBadToolCall: a streamed tool call had no name or arguments that are not a JSON object.
	ErrBadToolCall = errors.New("openai: malformed tool call")
	// ErrServer: the server reported an error inside the stream.
	ErrServer = errors.New("openai: server error in stream")
	// ErrEventTooLarge: one server-sent event exceeded the size limit.
	ErrEventTooLarge = sse.ErrEventTooLarge
)

// errStop ends sse.Read early at "data: [DONE]".
var errStop = errors.New("stop")

// chunk is one chat.completion.chunk.
type chunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          *string   `json:"content"`
			ReasoningContent *string   `json:"reasoning_content"`
			Reasoning        *string   `json:"reasoning"`
			ToolCalls        []tcDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// tcDelta is a fragment of a streamed tool call.
type tcDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// partialCall is a tool call being assembled.
type partialCall struct {
	id, name string
	args     strings.Builder
	whole    bool // arguments arrived as one JSON object, not string fragments
}

// assembler builds a Response from chunks. Compatible servers stream tool
// calls in different ways, all accepted here:
//   - OpenAI: the first fragment carries index, id and name, later ones only
//     the index and an arguments fragment;
//   - whole calls in one chunk, several with the same index (or none) but
//     different ids;
//   - no ids at all (an ID is made up), or no index (fragments follow the
//     call they belong to);
//   - arguments as a JSON object instead of a string.
type assembler struct {
	text, thinking strings.Builder
	calls          []*partialCall
	byIndex        map[int]*partialCall
	byID           map[string]*partialCall
	finish         string
	finished       bool
	done           bool
	model          string
	usage          plugin.Usage
}

func newAssembler() *assembler {
	return &assembler{byIndex: map[int]*partialCall{}, byID: map[string]*partialCall{}}
}

// feed takes one event's data. It returns the text and thinking pieces to
// show, and errStop at "[DONE]".
func (a *assembler) feed(data string) (plugin.Delta, error) {
	data = strings.TrimSpace(data)
	if data == "[DONE]" {
		a.done = true
		return plugin.Delta{}, errStop
	}
	if data == "" {
		return plugin.Delta{}, nil
	}
	var c chunk
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return plugin.Delta{}, fmt.Errorf("%w: %v", ErrBadChunk, err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return plugin.Delta{}, fmt.Errorf("%w: %s", ErrServer, truncate(string(c.Error), 300))
	}
	if c.Model != "" {
		a.model = c.Model
	}
	if c.Usage != nil {
		a.usage.InputTokens, a.usage.OutputTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
	}
	var d plugin.Delta
	for _, ch := range c.Choices {
		if ch.Index != 0 { // only the first choice is asked for
			continue
		}
		if ch.Delta.Content != nil {
			a.text.WriteString(*ch.Delta.Content)
			d.Text += *ch.Delta.Content
		}
		for _, r := range []*string{ch.Delta.ReasoningContent, ch.Delta.Reasoning} {
			if r != nil {
				a.thinking.WriteString(*r)
				d.Thinking += *r
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			if err := a.addToolDelta(tc); err != nil {
				return d, err
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finish, a.finished = *ch.FinishReason, true
		}
	}
	return d, nil
}

func (a *assembler) addToolDelta(tc tcDelta) error {
	var p *partialCall
	switch {
	case tc.Index != nil:
		p = a.byIndex[*tc.Index]
		if tc.ID != "" && p != nil && p.id != "" && p.id != tc.ID {
			p = a.byID[tc.ID] // a new call reusing the index
		}
	case tc.ID != "":
		p = a.byID[tc.ID]
	case tc.Function.Name == "" && len(a.calls) > 0:
		p = a.calls[len(a.calls)-1]
	}
	if p == nil {
		p = &partialCall{}
		a.calls = append(a.calls, p)
	}
	if tc.Index != nil {
		a.byIndex[*tc.Index] = p
	}
	if tc.ID != "" {
		p.id = tc.ID
		a.byID[tc.ID] = p
	}
	if tc.Function.Name != "" && p.name == "" {
		p.name = tc.Function.Name
	}
	raw := bytes.TrimSpace(tc.Function.Arguments)
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		var frag string
		if err := json.Unmarshal(raw, &frag); err != nil {
			return fmt.Errorf("%w: arguments: %v", ErrBadToolCall, err)
		}
		if p.whole {
			return fmt.Errorf("%w: argument fragment after whole arguments", ErrBadToolCall)
		}
		p.args.WriteString(frag)
	case raw[0] == '{':
		p.args.Reset()
		p.args.Write(raw)
		p.whole = true
	default:
		return fmt.Errorf("%w: arguments are %s", ErrBadToolCall, truncate(string(raw), 40))
	}
	return nil
}

// result finishes the reply. A stream that never said why it stopped is an
// error, as is a tool call without a name or with arguments that are not a
// JSON object.
func (a *assembler) result() (plugin.Response, error) {
	if !a.finished {
		return plugin.Response{}, ErrIncompleteStream
	}
	r := plugin.Response{
		Text: a.text.String(), Thinking: a.thinking.String(), StopReason: a.finish,
		Truncated: a.finish == "length", Model: a.model, Usage: a.usage,
	}
	for i, p := range a.calls {
		if p.name == "" {
			return plugin.Response{}, fmt.Errorf("%w: call %d has no name", ErrBadToolCall, i)
		}
		args := strings.TrimSpace(p.args.String())
		if args == "" {
			args = "{}"
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
			if r.Truncated {
				return plugin.Response{}, fmt.Errorf("%w: call %q cut off at the token limit", ErrBadToolCall, p.name)
			}
			return plugin.Response{}, fmt.Errorf("%w: call %q arguments are not a JSON object", ErrBadToolCall, p.name)
		}
		id := p.id
		if id == "" {
			id = "call_" + strconv.Itoa(i)
		}
		r.ToolCalls = append(r.ToolCalls, plugin.ToolCall{ID: id, Name: p.name, Arguments: json.RawMessage(args)})
	}
	return r, nil
}

// decodeStream reads a whole chat completions stream, calling onDelta for
// each piece of text. delivered reports whether onDelta was called.
func decodeStream(r io.Reader, onDelta func(plugin.Delta)) (resp plugin.Response, delivered bool, err error) {
	a := newAssembler()
	err = sse.Read(r, func(event, data string) error {
		if event == "error" {
			return fmt.Errorf("%w: %s", ErrServer, truncate(data, 300))
		}
		d, err := a.feed(data)
		if (d.Text != "" || d.Thinking != "") && onDelta != nil {
			onDelta(d)
			delivered = true
		}
		return err
	})
	if err != nil && !errors.Is(err, errStop) && !errors.Is(err, io.EOF) {
		return plugin.Response{}, delivered, err
	}
	resp, err = a.result()
	return resp, delivered, err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
