package hookcore

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"maps"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
)

// Mapping says how one of an agent's tools becomes an Action. The table
// itself lives in package action, so that every entry point that names the
// agent (eval, the HTTP API, the MCP gateway, explain) reads the agent's
// tools as the hooks do.
type Mapping = action.ToolMapping

// AnyAgent is the key of a Table entry that applies to every agent.
const AnyAgent = action.AnyAgent

// Table maps tool names to Mappings, per agent: entries of configuration
// first, then the agent-independent entries ("*"), then the built-in
// table (action.NewToolTable), then action.InferKind.
type Table struct {
	t *action.ToolTable
}

// NewTable returns the built-in table extended by extra (agent → tool →
// mapping; agent "*" applies to all). It validates extra.
func NewTable(extra map[string]map[string]Mapping) (*Table, error) {
	for agent := range extra {
		if agent != AnyAgent && !KnownAgent(agent) {
			return nil, fmt.Errorf("tools: %w %q", ErrUnknownAgent, agent)
		}
	}
	t, err := action.NewToolTable(extra)
	if err != nil {
		return nil, err
	}
	return &Table{t: t}, nil
}

// Tools returns the action-level table (nil for a nil Table: the built-in
// table).
func (t *Table) Tools() *action.ToolTable {
	if t == nil {
		return nil
	}
	return t.t
}

// Lookup returns the mapping of agent's tool.
func (t *Table) Lookup(agent, tool string) Mapping {
	if m, ok := t.Tools().Lookup(agent, tool); ok {
		return m
	}
	return Mapping{Kind: action.InferKind(tool)}
}

// Action builds the canonical action of ev: Agent is the agent's name,
// Session its session id, ToolUseID its call id, Cwd its working
// directory, Kind from the table. The arguments are a copy of tool_input
// read through the table (aliases added, misleading names moved: see
// action.ToolTable.Normalize). The id is left empty for the kernel to
// mint; the call id derived from the agent, the session and the tool-use
// id (so the post event names the same action) is its client_id.
func (t *Table) Action(ev *Event) *action.Action {
	args := maps.Clone(ev.ToolInput)
	if args == nil {
		args = map[string]any{}
	}
	a := &action.Action{
		Agent:     ev.Agent,
		Session:   ev.SessionID,
		ToolUseID: ev.ToolUseID,
		// What the agent program reports of its sub-agent; the model picks
		// the type when it spawns one, never the id (see docs/grants.md).
		SubagentID:   ev.AgentID,
		SubagentType: ev.AgentType,
		Tool:         ev.ToolName,
		Args:         args,
		Cwd:          ev.Cwd,
	}
	m, ok := t.Tools().Normalize(a)
	if !ok {
		a.Kind = action.InferKind(ev.ToolName)
	}
	if m.CwdArg != "" {
		if dir, ok := args[m.CwdArg].(string); ok && strings.TrimSpace(dir) != "" {
			a.Cwd = action.ResolvePath(ev.Cwd, dir)
		}
	}
	if m.IntentArg != "" {
		if s, ok := args[m.IntentArg].(string); ok {
			a.Intent = s
		}
	}
	// The id is Overseer's, minted when the call is judged; the call id
	// derived from the agent's tool-use id is only the correlation.
	a.ClientID = ActionID(ev)
	return a
}

// ActionID is the call id of a tool call, the action's client_id: derived
// from the agent, the session and the tool-use id, so that the post event
// of a call finds the action its pre event submitted (the action's own id
// is minted by Overseer). It is "" when the agent sends no tool-use id.
func ActionID(ev *Event) string {
	if ev.ToolUseID == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(ev.Agent + "\x00" + ev.SessionID + "\x00" + ev.ToolUseID))
	return "act_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:10]))
}
