package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// claudeLine is the part of a Claude Code transcript line ingest reads
// (observed with Claude Code 2.1.328; unknown fields and line types are
// ignored).
type claudeLine struct {
	Type        string          `json:"type"`
	SessionID   string          `json:"sessionId"`
	Cwd         string          `json:"cwd"`
	IsSidechain bool            `json:"isSidechain"`
	AgentID     string          `json:"agentId"`
	Timestamp   string          `json:"timestamp"`
	Message     json.RawMessage `json:"message"`
	ToolUse     json.RawMessage `json:"toolUseResult"`
}

type claudeMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type claudeParser struct {
	file string
}

// Quoted line types whose absence lets a line be skipped after a validity
// check: most of a transcript is bookkeeping.
var (
	quotedAssistant = []byte(`"assistant"`)
	quotedUser      = []byte(`"user"`)
)

func (p *claudeParser) Line(n int, line []byte) ([]Event, error) {
	if !bytes.Contains(line, quotedAssistant) && !bytes.Contains(line, quotedUser) {
		if !json.Valid(line) {
			return nil, errors.New("not a JSON object")
		}
		return nil, nil // neither an assistant nor a user line
	}
	var l claudeLine
	if err := decode(line, &l); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if l.Type != "assistant" && l.Type != "user" {
		return nil, nil // bookkeeping: attachments, snapshots, queue operations
	}
	if len(l.Message) == 0 || string(l.Message) == "null" {
		return nil, fmt.Errorf("%s line without a message", l.Type)
	}
	var m claudeMessage
	if err := decode(l.Message, &m); err != nil {
		return nil, fmt.Errorf("message: %v", err)
	}
	if len(m.Content) == 0 || m.Content[0] == '"' {
		return nil, nil // plain text
	}
	var blocks []claudeBlock
	if err := decode(m.Content, &blocks); err != nil {
		return nil, fmt.Errorf("message content: %v", err)
	}
	o := Origin{Format: FormatClaudeCode, File: p.file, Line: n, Time: parseTime(l.Timestamp)}
	if l.IsSidechain {
		o.SubAgent = l.AgentID
		if o.SubAgent == "" {
			o.SubAgent = "sidechain"
		}
	}
	var evs []Event
	var errs []error
	results := 0
	for i, b := range blocks {
		switch {
		case l.Type == "assistant" && b.Type == "tool_use":
			if strings.TrimSpace(b.Name) == "" || b.ID == "" {
				errs = append(errs, fmt.Errorf("tool_use block %d without a name or id", i))
				continue
			}
			in, err := objectOf(b.Input)
			if err != nil {
				errs = append(errs, fmt.Errorf("tool_use %s: input: %v", b.ID, err))
				continue
			}
			co := o
			co.ToolUseID = b.ID
			evs = append(evs, Event{Call: &Call{Origin: co, Agent: FormatClaudeCode, Session: l.SessionID, Tool: b.Name, Input: in, Cwd: l.Cwd}})
		case l.Type == "user" && b.Type == "tool_result":
			if b.ToolUseID == "" {
				errs = append(errs, fmt.Errorf("tool_result block %d without a tool_use_id", i))
				continue
			}
			ro := o
			ro.ToolUseID = b.ToolUseID
			evs = append(evs, Event{Result: &Result{Origin: ro, Agent: FormatClaudeCode, Session: l.SessionID,
				IsError: b.IsError, Text: clip(blockText(b.Content), MaxResultText)}})
			results++
		}
	}
	// The line's toolUseResult describes its one tool result in full.
	if results == 1 && len(l.ToolUse) > 0 {
		for i := range evs {
			if r := evs[i].Result; r != nil && !r.IsError {
				r.Change = claudeChange(l.ToolUse)
			}
		}
	}
	return evs, errors.Join(errs...)
}

// blockText flattens a tool result's content: a string or a list of
// blocks with text.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var parts []string
		for _, b := range blocks {
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return string(raw)
}

// claudeToolUse is toolUseResult of Write, Edit and MultiEdit.
type claudeToolUse struct {
	Type       string  `json:"type"` // Write: create, update
	FilePath   string  `json:"filePath"`
	Content    *string `json:"content"`
	Original   *string `json:"originalFile"`
	OldString  *string `json:"oldString"`
	NewString  *string `json:"newString"`
	ReplaceAll bool    `json:"replaceAll"`
	Edits      []struct {
		Old        string `json:"old_string"`
		New        string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	} `json:"edits"`
}

// claudeChange reconstructs the file write a toolUseResult describes, or
// returns nil when it does not describe one fully.
func claudeChange(raw json.RawMessage) *FileChange {
	var u claudeToolUse
	if json.Unmarshal(raw, &u) != nil || u.FilePath == "" {
		return nil
	}
	c := &FileChange{Path: u.FilePath}
	switch {
	case u.Content != nil && (u.Type == "create" || u.Type == "update"):
		// Write: a create has no previous content; an update names it.
		if u.Type == "update" && u.Original == nil {
			return nil
		}
		c.Before, c.After = u.Original, *u.Content
	case u.OldString != nil && u.NewString != nil && u.Original != nil:
		after, ok := replace(*u.Original, *u.OldString, *u.NewString, u.ReplaceAll)
		if !ok {
			return nil
		}
		c.Before, c.After = u.Original, after
	case len(u.Edits) > 0 && u.Original != nil:
		after := *u.Original
		for _, e := range u.Edits {
			var ok bool
			if after, ok = replace(after, e.Old, e.New, e.ReplaceAll); !ok {
				return nil
			}
		}
		c.Before, c.After = u.Original, after
	default:
		return nil
	}
	if len(c.After) > MaxChange || (c.Before != nil && len(*c.Before) > MaxChange) {
		return nil
	}
	return c
}

// replace applies one edit as Claude Code does: old must occur (once,
// unless all), and is replaced.
func replace(s, old, new string, all bool) (string, bool) {
	if old == "" {
		if s == "" {
			return new, true
		}
		return "", false
	}
	n := strings.Count(s, old)
	if n == 0 || (!all && n > 1) {
		return "", false
	}
	if all {
		return strings.ReplaceAll(s, old, new), true
	}
	return strings.Replace(s, old, new, 1), true
}
