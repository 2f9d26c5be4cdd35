package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// Generic is one line of the generic JSONL format (docs/audited-mode.md):
// one tool call per line, with its result and the file write it made when
// they are known. Unknown fields are errors, so a misspelt one is noticed.
type Generic struct {
	Agent   string         `json:"agent"`             // required
	Session string         `json:"session,omitempty"` // the agent's session id
	ID      string         `json:"id,omitempty"`      // the agent's id for the call: makes re-ingesting a copy idempotent
	Tool    string         `json:"tool"`              // required
	Kind    string         `json:"kind,omitempty"`    // optional canonical kind (shell, file_write, …)
	Args    map[string]any `json:"args"`
	Cwd     string         `json:"cwd,omitempty"`
	Time    *time.Time     `json:"time,omitempty"`
	Result  *struct {
		IsError bool   `json:"is_error"`
		Text    string `json:"text"`
	} `json:"result,omitempty"`
	Change *FileChange `json:"change,omitempty"`
}

type genericParser struct{ file string }

// reservedAgents are the agent names a generic line may not use as they are.
var reservedAgents = map[string]bool{
	action.AgentClaudeCode: true, action.AgentCodex: true, action.AgentGemini: true, "overseer": true,
}

func (p *genericParser) Line(n int, line []byte) ([]Event, error) {
	var g Generic
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("not a call: %v", err)
	}
	if dec.More() {
		return nil, errors.New("trailing data after the call")
	}
	if strings.TrimSpace(g.Agent) == "" || strings.TrimSpace(g.Tool) == "" {
		return nil, errors.New(`a call needs "agent" and "tool"`)
	}
	if reservedAgents[g.Agent] {
		// These names are the hooked agents' and Overseer's own: a generic
		// line may not pass for one of them.
		g.Agent = "jsonl:" + g.Agent
	}
	if g.Args == nil {
		g.Args = map[string]any{}
	}
	o := Origin{Format: FormatGeneric, File: p.file, Line: n, ToolUseID: g.ID}
	if g.ID == "" {
		o.LineHash = lineHash(line)
	}
	if g.Time != nil {
		o.Time = *g.Time
	}
	ev := Event{Call: &Call{Origin: o, Agent: g.Agent, Session: g.Session, Tool: g.Tool, Kind: g.Kind, Input: g.Args, Cwd: g.Cwd}}
	if g.Result != nil || g.Change != nil {
		r := &Result{Origin: o, Agent: g.Agent, Session: g.Session, Key: ev.Call.Key()}
		if g.Result != nil {
			r.IsError, r.Text = g.Result.IsError, clip(g.Result.Text, MaxResultText)
		}
		if c := g.Change; c != nil {
			if c.Path == "" || len(c.After) > MaxChange || (c.Before != nil && len(*c.Before) > MaxChange) {
				return nil, errors.New("change: needs a path, and contents under 1 MiB")
			}
			r.Change = c
		}
		ev.Result = r
	}
	return []Event{ev}, nil
}
