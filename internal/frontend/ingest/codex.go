package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// codexLine is a line of a Codex rollout (observed with Codex 0.169.0):
// {"timestamp", "type", "payload"}.
type codexLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexPayload struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Cwd       string          `json:"cwd"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // function_call: a JSON string
	Input     json.RawMessage `json:"input"`     // custom_tool_call: the tool's free-form input
	Action    json.RawMessage `json:"action"`    // local_shell_call
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
}

// codexParser keeps the session and working directory the rollout
// declared (session_meta, then each turn_context).
type codexParser struct {
	file    string
	session string
	cwd     string
}

// codexTypes are the line types the parser reads; a line naming none of
// them is skipped after a validity check.
var codexTypes = [][]byte{[]byte("response_item"), []byte("session_meta"), []byte("turn_context")}

func (p *codexParser) Line(n int, line []byte) ([]Event, error) {
	relevant := false
	for _, t := range codexTypes {
		relevant = relevant || bytes.Contains(line, t)
	}
	if !relevant {
		if !json.Valid(line) {
			return nil, errors.New("not a JSON object")
		}
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(line, &probe) != nil || probe.Type == "" {
			return nil, errors.New("line without a type")
		}
		return nil, nil // events, token counts, world state
	}
	var l codexLine
	if err := decode(line, &l); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if l.Type == "" {
		return nil, errors.New("line without a type")
	}
	switch l.Type {
	case "session_meta", "turn_context", "response_item":
	default:
		return nil, nil // events, token counts, world state
	}
	var pl codexPayload
	if err := decode(l.Payload, &pl); err != nil {
		return nil, fmt.Errorf("%s payload: %v", l.Type, err)
	}
	switch l.Type {
	case "session_meta":
		p.session = pl.ID
		if pl.Cwd != "" {
			p.cwd = pl.Cwd
		}
		return nil, nil
	case "turn_context":
		if pl.Cwd != "" {
			p.cwd = pl.Cwd
		}
		return nil, nil
	}
	o := Origin{Format: FormatCodex, File: p.file, Line: n, Time: parseTime(l.Timestamp), ToolUseID: pl.CallID}
	if o.ToolUseID == "" {
		o.LineHash = lineHash(line)
	}
	call := func(tool string, in map[string]any) []Event {
		return []Event{{Call: &Call{Origin: o, Agent: FormatCodex, Session: p.session, Tool: tool, Input: in, Cwd: p.cwd}}}
	}
	switch pl.Type {
	case "function_call":
		if strings.TrimSpace(pl.Name) == "" {
			return nil, errors.New("function_call without a name")
		}
		in, err := objectOf(pl.Arguments)
		if err != nil {
			return nil, fmt.Errorf("function_call %s: arguments: %v", pl.CallID, err)
		}
		return call(pl.Name, in), nil
	case "custom_tool_call":
		if strings.TrimSpace(pl.Name) == "" {
			return nil, errors.New("custom_tool_call without a name")
		}
		var s string
		if err := json.Unmarshal(pl.Input, &s); err != nil {
			in, err := objectOf(pl.Input)
			if err != nil {
				return nil, fmt.Errorf("custom_tool_call %s: input: %v", pl.CallID, err)
			}
			return call(pl.Name, in), nil
		}
		return call(pl.Name, map[string]any{"input": s}), nil
	case "local_shell_call":
		var act struct {
			Command []string `json:"command"`
			Workdir string   `json:"working_directory"`
		}
		if err := json.Unmarshal(pl.Action, &act); err != nil || len(act.Command) == 0 {
			return nil, errors.New("local_shell_call without a command")
		}
		in := map[string]any{"command": anyList(act.Command)}
		if act.Workdir != "" {
			in["workdir"] = act.Workdir
		}
		return call("local_shell", in), nil
	case "function_call_output", "custom_tool_call_output":
		if pl.CallID == "" {
			return nil, fmt.Errorf("%s without a call_id", pl.Type)
		}
		text := outputText(pl.Output)
		return []Event{{Result: &Result{Origin: o, Agent: FormatCodex, Session: p.session,
			IsError: codexFailed(text), Text: clip(text, MaxResultText)}}}, nil
	}
	return nil, nil // messages, reasoning
}

func anyList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// outputText is a call output: a string, or an object with "content".
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Content != "" {
		return o.Content
	}
	return string(raw)
}

// codexFailed reads a shell output's exit code line.
func codexFailed(text string) bool {
	i := strings.Index(text, "Process exited with code ")
	if i < 0 {
		return false
	}
	rest := text[i+len("Process exited with code "):]
	return !strings.HasPrefix(rest, "0\n") && rest != "0"
}
