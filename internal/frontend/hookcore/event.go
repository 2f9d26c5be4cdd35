// Package hookcore is the light part of Overseer's agent hooks: the hook
// event of each agent (Claude Code, Codex CLI, Gemini CLI) and its parsing,
// the tool table that maps a call to a canonical Action, the hooks'
// configuration, the answer in each agent's format, and the hook's client
// of a running daemon. It imports no judging code (no policy, store,
// guards or kernel), so that the lean hook entry (cmd/overseer-hook), which
// runs before every tool call an agent makes, starts as fast as a bare Go
// program; package hooks builds the full hook (judging in this process when
// no daemon runs, keeping file contents, scanning results) on top of it.
//
// Every failure ends in a deny: the agents treat a hook's exit status other
// than 0 and 2 as a non-blocking error and run the tool anyway, so a hook
// answers only with 0 (a decision on standard output) or 2 (a reason on
// standard error).
package hookcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
)

// Agent names, as used in `overseer hook <agent>` and recorded as
// Action.Agent.
const (
	ClaudeCode = action.AgentClaudeCode
	Codex      = action.AgentCodex
	Gemini     = action.AgentGemini
)

// Agents lists the supported agents.
var Agents = []string{ClaudeCode, Codex, Gemini}

// Sentinel errors of ParseEvent. Each one ends in a deny.
var (
	ErrUnknownAgent = errors.New("unknown agent")
	ErrEmptyInput   = errors.New("no hook event on standard input")
	ErrBadInput     = errors.New("the hook event is not valid JSON")
	ErrUnknownEvent = errors.New("unknown hook event")
	ErrNoTool       = errors.New("the hook event names no tool")
)

// Phase says whether an event comes before a tool call (it may be denied)
// or after it (it is only recorded).
type Phase int

const (
	// PhasePre events come before the call: PreToolUse, PermissionRequest,
	// BeforeTool.
	PhasePre Phase = iota + 1
	// PhasePost events come after the call: PostToolUse,
	// PostToolUseFailure, AfterTool.
	PhasePost
)

// String returns "pre" or "post".
func (p Phase) String() string {
	switch p {
	case PhasePre:
		return "pre"
	case PhasePost:
		return "post"
	}
	return fmt.Sprintf("phase(%d)", int(p))
}

// events maps each agent's hook event names to their phase.
var events = map[string]map[string]Phase{
	ClaudeCode: {"PreToolUse": PhasePre, "PermissionRequest": PhasePre,
		"PostToolUse": PhasePost, "PostToolUseFailure": PhasePost},
	Codex:  {"PreToolUse": PhasePre, "PermissionRequest": PhasePre, "PostToolUse": PhasePost},
	Gemini: {"BeforeTool": PhasePre, "AfterTool": PhasePost},
}

// KnownAgent reports whether agent is one of Agents.
func KnownAgent(agent string) bool {
	_, ok := events[agent]
	return ok
}

// Event is one hook call, as the agent sent it.
type Event struct {
	Agent string `json:"-"`
	// Name is hook_event_name as sent ("PreToolUse", "BeforeTool", …).
	Name  string `json:"hook_event_name"`
	Phase Phase  `json:"-"`

	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	ToolName       string `json:"tool_name"`
	ToolUseID      string `json:"tool_use_id"`
	// AgentID and AgentType name the sub-agent that makes the call (Claude
	// Code 2.1.328 sends them for calls inside a sub-agent; the main
	// agent's calls carry neither).
	AgentID   string `json:"agent_id"`
	AgentType string `json:"agent_type"`
	// Model is the model the agent runs (Codex sends it).
	Model string `json:"model,omitempty"`
	// ToolInput is the call's arguments. An input that is not a JSON object
	// is kept under the key "input".
	ToolInput map[string]any `json:"-"`
	// ToolResponse is what the call returned (post events only).
	ToolResponse json.RawMessage `json:"-"`
	// Error is the failure a PostToolUseFailure event reports.
	Error string `json:"-"`
}

// wire is the decoding shape: the fields every agent sends, with the
// polymorphic ones kept raw. Unknown fields are ignored.
type wire struct {
	Event
	RawInput    json.RawMessage `json:"tool_input"`
	RawResponse json.RawMessage `json:"tool_response"`
	RawError    json.RawMessage `json:"error"`
}

// MaxInput caps the size of a hook event.
const MaxInput = 16 << 20

// ParseEvent decodes one hook event of agent. Fields it does not know are
// ignored; a missing or unknown hook_event_name, a missing tool_name, and
// input that is empty or not a JSON object are errors.
func ParseEvent(agent string, data []byte) (*Event, error) {
	phases, ok := events[agent]
	if !ok {
		return nil, fmt.Errorf("%w %q (want one of %s)", ErrUnknownAgent, agent, strings.Join(Agents, ", "))
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, ErrEmptyInput
	}
	if len(data) > MaxInput {
		return nil, fmt.Errorf("%w: the event is larger than %d bytes", ErrBadInput, MaxInput)
	}
	w, err := decodeWire(data)
	if err != nil {
		return nil, err
	}
	ev := w.Event
	ev.Agent = agent
	ph, ok := phases[ev.Name]
	if !ok {
		if ev.Name == "" {
			return nil, fmt.Errorf("%w: hook_event_name is missing", ErrUnknownEvent)
		}
		return nil, fmt.Errorf("%w %q for %s", ErrUnknownEvent, ev.Name, agent)
	}
	ev.Phase = ph
	if strings.TrimSpace(ev.ToolName) == "" {
		return nil, ErrNoTool
	}
	in, err := decodeInput(w.RawInput)
	if err != nil {
		return nil, err
	}
	ev.ToolInput = in
	if len(w.RawResponse) > 0 && string(w.RawResponse) != "null" {
		ev.ToolResponse = w.RawResponse
	}
	if len(w.RawError) > 0 && string(w.RawError) != "null" {
		var s string
		if json.Unmarshal(w.RawError, &s) == nil {
			ev.Error = s
		} else {
			ev.Error = string(w.RawError)
		}
	}
	return &ev, nil
}

// decodeWire decodes an event as encoding/json does into wire, with
// nothing but white space or a closing bracket after it (dec.More):
// through fastWire, else encoding/json itself.
func decodeWire(data []byte) (wire, error) {
	if w, ok := fastWire(data); ok {
		return w, nil
	}
	var w wire
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil {
		return wire{}, fmt.Errorf("%w: %v", ErrBadInput, err)
	}
	if dec.More() {
		return wire{}, fmt.Errorf("%w: trailing data after the event", ErrBadInput)
	}
	return w, nil
}

// wireFields are wire's keys, in the order fastWire handles them.
var wireFields = []string{"hook_event_name", "session_id", "transcript_path", "cwd", "permission_mode",
	"tool_name", "tool_use_id", "agent_id", "agent_type", "model", "tool_input", "tool_response", "error"}

// fastWire decodes an event object followed by nothing but white space as
// encoding/json decodes it into wire, or declines (see fastjson.go).
func fastWire(data []byte) (w wire, ok bool) {
	s := &scan{b: data}
	if s.peek() != '{' {
		return wire{}, false
	}
	strs := [...]*string{&w.Name, &w.SessionID, &w.TranscriptPath, &w.Cwd, &w.PermissionMode,
		&w.ToolName, &w.ToolUseID, &w.AgentID, &w.AgentType, &w.Model}
	raws := [...]*json.RawMessage{&w.RawInput, &w.RawResponse, &w.RawError}
	ok = s.object(func(key string) bool {
		i, ok := field(key, wireFields...)
		switch {
		case !ok:
			return false
		case i < 0:
			return s.skip()
		case i < len(strs):
			return s.strField(strs[i])
		}
		// A json.RawMessage is the value's bytes, null included; the last
		// of duplicate keys wins.
		s.ws()
		start := s.i
		if !s.skip() {
			return false
		}
		*raws[i-len(strs)] = json.RawMessage(bytes.Clone(data[start:s.i]))
		return true
	})
	if !ok || !s.end() {
		return wire{}, false
	}
	return w, true
}

// decodeInput turns tool_input into an argument map: an object as is,
// anything else (a string, a list) under "input", nothing as an empty map.
func decodeInput(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	if v, ok := fastValue(raw); ok {
		if m, ok := v.(map[string]any); ok {
			return m, nil
		}
		return map[string]any{"input": v}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: tool_input: %v", ErrBadInput, err)
	}
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	return map[string]any{"input": v}, nil
}
