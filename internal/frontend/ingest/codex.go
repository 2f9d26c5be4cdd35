package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/overseer-dev/overseer/internal/patchfmt"
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
	// patches are the apply_patch calls whose output is still to come,
	// by call id: the output says whether the patch was applied.
	patches map[string]codexPatch
}

// codexPatch is an apply_patch call: its patch and the directory its
// paths are relative to.
type codexPatch struct{ patch, cwd string }

// maxPendingPatches bounds the apply_patch calls kept for their output.
const maxPendingPatches = 256

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
		if tool == "apply_patch" && pl.CallID != "" {
			if patch, ok := in["input"].(string); ok && len(patch) <= MaxChange {
				if p.patches == nil {
					p.patches = map[string]codexPatch{}
				}
				if len(p.patches) < maxPendingPatches {
					p.patches[pl.CallID] = codexPatch{patch: patch, cwd: p.cwd}
				}
			}
		}
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
		r := &Result{Origin: o, Agent: FormatCodex, Session: p.session, IsError: codexFailed(text), Text: clip(text, MaxResultText)}
		if pc, ok := p.patches[pl.CallID]; ok {
			delete(p.patches, pl.CallID)
			// apply_patch says "Success." when it applied the patch, and
			// why not otherwise ("apply_patch verification failed: …").
			if !r.IsError && strings.Contains(text, "Success.") {
				r.Change = patchChange(pc)
			} else {
				r.IsError = true
			}
		}
		return []Event{{Result: r}}, nil
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

// codexFailed reads a shell output's exit code line ("Process exited with
// code N"; apply_patch's "Exit code: N").
func codexFailed(text string) bool {
	for _, lead := range []string{"Process exited with code ", "Exit code: "} {
		i := strings.Index(text, lead)
		if i < 0 {
			continue
		}
		rest := text[i+len(lead):]
		return !strings.HasPrefix(rest, "0\n") && rest != "0"
	}
	return false
}

// patchChange is the file change an applied apply_patch call made, when it
// can be undone: a patch of one file operation, adding a file (whose whole
// content the patch holds) or updating one in place (undone by reversing
// the patch). Deletions, moves and patches of several files are not.
func patchChange(pc codexPatch) *FileChange {
	fs, err := patchfmt.ParsePatch(pc.patch)
	if err != nil || len(fs) != 1 {
		return nil
	}
	f := fs[0]
	p := f.Path
	if !filepath.IsAbs(p) {
		if pc.cwd == "" || !filepath.IsAbs(pc.cwd) {
			return nil
		}
		p = filepath.Join(pc.cwd, p)
	}
	p = filepath.Clean(p)
	switch {
	case f.Op == "add":
		content, err := patchfmt.AddedContent(f.Body)
		if err != nil || len(content) > MaxChange {
			return nil
		}
		return &FileChange{Path: p, After: content}
	case f.Op == "update" && f.MoveTo == "":
		return &FileChange{Path: p, Patch: f.Body}
	}
	return nil
}
