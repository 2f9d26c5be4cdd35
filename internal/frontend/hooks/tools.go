package hooks

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"maps"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
)

// Mapping says how one of an agent's tools becomes an Action.
type Mapping struct {
	// Kind is the canonical kind of the tool.
	Kind action.Kind `yaml:"kind" json:"kind"`
	// Alias copies an argument under the name Overseer's analyzers read,
	// when the agent spells it differently: {file_path: absolute_path}
	// sets args.file_path from args.absolute_path unless file_path is set.
	Alias map[string]string `yaml:"alias,omitempty" json:"alias,omitempty"`
	// CwdArg names an argument that holds the directory the call runs in,
	// relative to the event's cwd (Gemini's run_shell_command "directory").
	CwdArg string `yaml:"cwd_arg,omitempty" json:"cwd_arg,omitempty"`
	// IntentArg names an argument in which the agent says what the call is
	// for (Claude Code's Bash "description"); it becomes Action.Intent.
	IntentArg string `yaml:"intent_arg,omitempty" json:"intent_arg,omitempty"`
}

// Validate checks a mapping.
func (m Mapping) Validate() error {
	if !m.Kind.Valid() {
		return fmt.Errorf("kind %q is not a canonical kind", m.Kind)
	}
	for to, from := range m.Alias {
		if to == "" || from == "" {
			return fmt.Errorf("alias %q: %q: both names are required", to, from)
		}
	}
	return nil
}

// defaultTools is the built-in table: each agent's tool names, exactly as
// the agent spells them. Tools not listed fall back to action.InferKind
// (which knows mcp__server__tool) and then to "other".
var defaultTools = map[string]map[string]Mapping{
	ClaudeCode: {
		"Bash":         {Kind: action.KindShell, IntentArg: "description"},
		"Read":         {Kind: action.KindFileRead},
		"Write":        {Kind: action.KindFileWrite},
		"Edit":         {Kind: action.KindFileEdit},
		"MultiEdit":    {Kind: action.KindFileEdit},
		"NotebookEdit": {Kind: action.KindFileEdit},
		"NotebookRead": {Kind: action.KindFileRead},
		"Glob":         {Kind: action.KindFileRead},
		"Grep":         {Kind: action.KindFileRead},
		"LS":           {Kind: action.KindFileRead},
		"WebFetch":     {Kind: action.KindNetFetch},
		"WebSearch":    {Kind: action.KindOther},
		"Task":         {Kind: action.KindOther},
		"TodoWrite":    {Kind: action.KindOther},
	},
	Codex: {
		"Bash":           {Kind: action.KindShell},
		"exec_command":   {Kind: action.KindShell},
		"shell":          {Kind: action.KindShell},
		"local_shell":    {Kind: action.KindShell},
		"unified_exec":   {Kind: action.KindShell},
		"apply_patch":    {Kind: action.KindFileEdit},
		"web_search":     {Kind: action.KindOther},
		"update_plan":    {Kind: action.KindOther},
		"view_image":     {Kind: action.KindFileRead},
		"read_file":      {Kind: action.KindFileRead},
		"list_dir":       {Kind: action.KindFileRead},
		"grep_files":     {Kind: action.KindFileRead},
		"write_stdin":    {Kind: action.KindShell},
		"container.exec": {Kind: action.KindShell},
	},
	Gemini: {
		"run_shell_command":   {Kind: action.KindShell, CwdArg: "directory", IntentArg: "description"},
		"read_file":           {Kind: action.KindFileRead, Alias: map[string]string{"file_path": "absolute_path"}},
		"read_many_files":     {Kind: action.KindFileRead},
		"write_file":          {Kind: action.KindFileWrite, Alias: map[string]string{"file_path": "absolute_path"}},
		"replace":             {Kind: action.KindFileEdit, Alias: map[string]string{"file_path": "absolute_path"}},
		"list_directory":      {Kind: action.KindFileRead},
		"glob":                {Kind: action.KindFileRead},
		"search_file_content": {Kind: action.KindFileRead},
		"grep_search":         {Kind: action.KindFileRead},
		"web_fetch":           {Kind: action.KindNetFetch},
		"google_web_search":   {Kind: action.KindOther},
		"save_memory":         {Kind: action.KindOther},
		"write_todos":         {Kind: action.KindOther},
	},
}

// AnyAgent is the key of a Table entry that applies to every agent.
const AnyAgent = "*"

// Table maps tool names to Mappings, per agent. Entries of configuration
// come first, then the agent-independent entries ("*"), then the built-in
// table, then action.InferKind.
type Table struct {
	extra map[string]map[string]Mapping
}

// NewTable returns the built-in table extended by extra (agent → tool →
// mapping; agent "*" applies to all). It validates extra.
func NewTable(extra map[string]map[string]Mapping) (*Table, error) {
	for agent, tools := range extra {
		if agent != AnyAgent && !KnownAgent(agent) {
			return nil, fmt.Errorf("tools: %w %q", ErrUnknownAgent, agent)
		}
		for name, m := range tools {
			if err := m.Validate(); err != nil {
				return nil, fmt.Errorf("tools.%s.%s: %w", agent, name, err)
			}
		}
	}
	return &Table{extra: extra}, nil
}

// Lookup returns the mapping of agent's tool.
func (t *Table) Lookup(agent, tool string) Mapping {
	if t != nil {
		if m, ok := t.extra[agent][tool]; ok {
			return m
		}
		if m, ok := t.extra[AnyAgent][tool]; ok {
			return m
		}
	}
	if m, ok := defaultTools[agent][tool]; ok {
		return m
	}
	return Mapping{Kind: action.InferKind(tool)}
}

// Action builds the canonical action of ev: Agent is the agent's name,
// Session its session id, ToolUseID its call id, Cwd its working
// directory, Kind from the table. The arguments are a copy of tool_input
// with the mapping's aliases added. The id is derived from the agent, the
// session and the tool-use id when the agent sends one (so the post event
// names the same action); otherwise it is left empty for the kernel to fill.
func (t *Table) Action(ev *Event) *action.Action {
	m := t.Lookup(ev.Agent, ev.ToolName)
	args := maps.Clone(ev.ToolInput)
	if args == nil {
		args = map[string]any{}
	}
	for to, from := range m.Alias {
		if _, set := args[to]; set {
			continue
		}
		if v, ok := args[from]; ok {
			args[to] = v
		}
	}
	a := &action.Action{
		Agent:     ev.Agent,
		Session:   ev.SessionID,
		ToolUseID: ev.ToolUseID,
		Tool:      ev.ToolName,
		Kind:      m.Kind,
		Args:      args,
		Cwd:       ev.Cwd,
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
