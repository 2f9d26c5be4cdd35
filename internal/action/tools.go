package action

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Names of the agents whose own tools the built-in tool table knows, as
// recorded in Action.Agent (and used in `overseer hook <agent>`).
const (
	AgentClaudeCode = "claude-code"
	AgentCodex      = "codex"
	AgentGemini     = "gemini"
)

// AnyAgent is the agent of a tool table entry that applies to every agent.
const AnyAgent = "*"

// ToolMapping says how one of an agent's own tools becomes an Action: its
// canonical kind, the default level of a call that has no effect Overseer
// can see, and how its arguments are read.
type ToolMapping struct {
	// Kind is the canonical kind of the tool.
	Kind Kind `yaml:"kind" json:"kind"`
	// Level is the tool's default level, in place of its kind's default,
	// for a call with no effect outside the agent beyond reads inside the
	// working directory: the agent's own bookkeeping (a todo list, a plan,
	// a sub-agent whose calls are judged one by one) is auto, a web search
	// notify. A call that carries a command, a URL, a write or a read
	// elsewhere gets no such default: it is judged on those effects. Unset
	// means the kind's default.
	Level Level `yaml:"level,omitempty" json:"level,omitempty"`
	// Note says what the tool is, for a person reading a verdict.
	Note string `yaml:"note,omitempty" json:"note,omitempty"`
	// Alias copies an argument under the name Overseer's analyzers read,
	// when the agent spells it differently: {file_path: absolute_path}
	// sets args.file_path from args.absolute_path unless file_path is set.
	Alias map[string]string `yaml:"alias,omitempty" json:"alias,omitempty"`
	// Move renames an argument that the analyzers would misread under the
	// agent's name for it: {input: command} moves Codex's apply_patch
	// patch, which its hooks send as "command", to "input", so that it is
	// judged as the file edits it makes and not as a shell command. An
	// argument already set under the new name is left alone.
	Move map[string]string `yaml:"move,omitempty" json:"move,omitempty"`
	// CwdArg names an argument that holds the directory the call runs in,
	// relative to the event's cwd (Gemini's run_shell_command "directory").
	// The hooks apply it when they build the action.
	CwdArg string `yaml:"cwd_arg,omitempty" json:"cwd_arg,omitempty"`
	// IntentArg names an argument in which the agent says what the call is
	// for (Claude Code's Bash "description"); it becomes Action.Intent. The
	// hooks apply it when they build the action.
	IntentArg string `yaml:"intent_arg,omitempty" json:"intent_arg,omitempty"`
	// Dir means the tool reads below a directory: the one its path argument
	// names, the working directory when it names none (Claude Code's Grep
	// and Glob without "path").
	Dir bool `yaml:"dir,omitempty" json:"dir,omitempty"`
	// Contents means the tool reads the content of the files below the
	// directories it reads (a search of their text), not only their names:
	// a secret or Overseer's home below counts as read (PathFact.Below).
	Contents bool `yaml:"contents,omitempty" json:"contents,omitempty"`
	// Patterns name the arguments that hold glob patterns (a string or a
	// list of strings) relative to that directory: each pattern reads the
	// directory its fixed leading part names (Glob's "/etc/**" reads /etc).
	Patterns []string `yaml:"patterns,omitempty" json:"patterns,omitempty"`
	// URIArg names an argument that holds a resource URI; a file:// URI is
	// a read of that file (an MCP resource backed by a file).
	URIArg string `yaml:"uri_arg,omitempty" json:"uri_arg,omitempty"`
}

// Validate checks a mapping.
func (m ToolMapping) Validate() error {
	if !m.Kind.Valid() {
		return fmt.Errorf("kind %q is not a canonical kind", m.Kind)
	}
	if m.Level != Unset && !m.Level.Valid() {
		return fmt.Errorf("level %v is not a level", m.Level)
	}
	for _, names := range []map[string]string{m.Alias, m.Move} {
		for to, from := range names {
			if to == "" || from == "" || to == from {
				return fmt.Errorf("argument %q from %q: both names are required, and they must differ", to, from)
			}
		}
	}
	for _, p := range m.Patterns {
		if p == "" {
			return fmt.Errorf("patterns: an empty argument name")
		}
	}
	return nil
}

// builtinTools is the built-in table: each agent's own tools, exactly as
// the agent spells them in its hook events (Claude Code 2.1.328's tool
// names and input schemas as its package ships them, with the names of
// earlier 2.x releases; Codex CLI 0.169; Gemini CLI; see
// docs/integrations/tool-tables.md). Tools
// not listed fall back to InferKind (which knows mcp__server__tool) and
// then to "other".
var builtinTools = map[string]map[string]ToolMapping{
	AgentClaudeCode: {
		"Bash":         {Kind: KindShell, IntentArg: "description"},
		"Read":         {Kind: KindFileRead},
		"Write":        {Kind: KindFileWrite},
		"Edit":         {Kind: KindFileEdit},
		"MultiEdit":    {Kind: KindFileEdit},
		"NotebookEdit": {Kind: KindFileEdit},
		"NotebookRead": {Kind: KindFileRead},
		"Glob":         {Kind: KindFileRead, Dir: true, Patterns: []string{"pattern"}},
		"Grep":         {Kind: KindFileRead, Dir: true, Contents: true},
		"LS":           {Kind: KindFileRead, Dir: true},
		"LSP":          {Kind: KindFileRead, Dir: true, Alias: map[string]string{"file_path": "filePath"}},
		"WebFetch":     {Kind: KindNetFetch},
		"WebSearch":    {Kind: KindOther, Level: Notify, Note: "a web search run by the model provider"},
		// Sub-agents: their own tool calls come through the same hooks and
		// are judged one by one.
		"Task":        {Kind: KindOther, Level: Auto, Note: "a sub-agent, whose own calls are judged one by one"},
		"Agent":       {Kind: KindOther, Level: Auto, Note: "a sub-agent, whose own calls are judged one by one"},
		"SendMessage": {Kind: KindOther, Level: Auto, Note: "a message to a teammate agent"},
		"TeamCreate":  {Kind: KindOther, Level: Auto, Note: "a team of sub-agents, whose own calls are judged one by one"},
		"TeamDelete":  {Kind: KindOther, Level: Auto, Note: "the end of a team of sub-agents"},
		// The agent's own bookkeeping: nothing outside the agent changes.
		"TodoWrite":       {Kind: KindOther, Level: Auto, Note: "the agent's todo list"},
		"TaskCreate":      {Kind: KindOther, Level: Auto, Note: "the agent's task list"},
		"TaskUpdate":      {Kind: KindOther, Level: Auto, Note: "the agent's task list"},
		"TaskList":        {Kind: KindOther, Level: Auto, Note: "the agent's task list"},
		"TaskGet":         {Kind: KindOther, Level: Auto, Note: "the agent's task list"},
		"TaskOutput":      {Kind: KindOther, Level: Auto, Note: "the output of a background task the agent started"},
		"TaskStop":        {Kind: KindOther, Level: Auto, Note: "the end of a background task the agent started"},
		"BashOutput":      {Kind: KindOther, Level: Auto, Note: "the output of a background shell the agent started"},
		"KillShell":       {Kind: KindOther, Level: Auto, Note: "the end of a background shell the agent started"},
		"KillBash":        {Kind: KindOther, Level: Auto, Note: "the end of a background shell the agent started"},
		"ExitPlanMode":    {Kind: KindOther, Level: Auto, Note: "the agent's plan, shown to the user"},
		"EnterPlanMode":   {Kind: KindOther, Level: Auto, Note: "the agent's plan mode"},
		"AskUserQuestion": {Kind: KindOther, Level: Auto, Note: "a question the agent asks its user"},
		"Skill":           {Kind: KindOther, Level: Auto, Note: "instructions the agent loads (the commands its file runs as it loads are judged as commands); what it then does is judged call by call"},
		// SlashCommand's "command" is a slash command ("/review"), not a
		// shell command.
		"SlashCommand":             {Kind: KindOther, Level: Auto, Note: "a slash command's prompt", Move: map[string]string{"slash_command": "command"}},
		"ToolSearch":               {Kind: KindOther, Level: Auto, Note: "a search of the agent's own tools"},
		"CronList":                 {Kind: KindOther, Level: Auto, Note: "the session's scheduled prompts"},
		"CronDelete":               {Kind: KindOther, Level: Auto, Note: "the session's scheduled prompts"},
		"CronCreate":               {Kind: KindOther, Level: Notify, Note: "a prompt scheduled in this session; what it does is judged call by call"},
		"EnterWorktree":            {Kind: KindOther, Level: Notify, Note: "a git worktree the agent creates and works in"},
		"ExitWorktree":             {Kind: KindOther, Level: Notify, Note: "leaving (or removing) the worktree the agent created"},
		"ListMcpResourcesTool":     {Kind: KindOther, Level: Auto, Note: "a read of the resources MCP servers offer"},
		"ReadMcpResourceTool":      {Kind: KindOther, Level: Auto, Note: "a read of an MCP server's resource", URIArg: "uri"},
		"ReadMcpResourceDirTool":   {Kind: KindOther, Level: Auto, Note: "a read of an MCP server's resource directory", URIArg: "uri"},
		"RefreshMcpTools":          {Kind: KindOther, Level: Auto, Note: "a refresh of the MCP servers' tool lists"},
		"WaitForMcpServers":        {Kind: KindOther, Level: Auto, Note: "waiting for MCP servers to start"},
		"ListAgents":               {Kind: KindOther, Level: Auto, Note: "a list of the agents it can message"},
		"SubagentHandback":         {Kind: KindOther, Level: Auto, Note: "a sub-agent handing back to its parent"},
		"ReportFindings":           {Kind: KindOther, Level: Auto, Note: "review findings shown to the user"},
		"SendUserMessage":          {Kind: KindOther, Level: Auto, Note: "a message to its user"},
		"PushNotification":         {Kind: KindOther, Level: Auto, Note: "a notification to its user"},
		"ReadNotifications":        {Kind: KindOther, Level: Auto, Note: "its user's notifications"},
		"SetGoal":                  {Kind: KindOther, Level: Auto, Note: "a goal it proposes to its user"},
		"propose_skills":           {Kind: KindOther, Level: Auto, Note: "skills it proposes to its user"},
		"EndConversation":          {Kind: KindOther, Level: Auto, Note: "the end of the conversation"},
		"OfferChromeSetup":         {Kind: KindOther, Level: Auto, Note: "an offer shown to its user"},
		"ShowOnboardingRolePicker": {Kind: KindOther, Level: Auto, Note: "a picker shown to its user"},
		"ShareOnboardingGuide":     {Kind: KindOther, Level: Auto, Note: "a guide shown to its user"},
		"ScheduleWakeup":           {Kind: KindOther, Level: Notify, Note: "a later wake-up of this session; what it then does is judged call by call"},
		"SendFeedback":             {Kind: KindOther, Level: Notify, Note: "feedback sent to Anthropic"},
		// Monitor runs a command in the background and streams its output.
		"Monitor": {Kind: KindShell, IntentArg: "description"},
		// Not given a default: they reach outside the machine or run code
		// Overseer does not parse.
		"Artifact":      {Kind: KindOther, Note: "publishes or manages files as pages on claude.ai"},
		"Projects":      {Kind: KindOther, Note: "reads and writes claude.ai projects"},
		"RemoteTrigger": {Kind: KindOther, Note: "creates and runs remote Claude sessions"},
		"SendUserFile":  {Kind: KindOther, Note: "sends a file to its user's devices"},
		"ClaudeDesign":  {Kind: KindOther, Note: "a design operation on claude.ai"},
		"Workflow":      {Kind: KindOther, Note: "a workflow script that orchestrates sub-agents (the script is not analysed)"},
		"PowerShell":    {Kind: KindOther, Note: "a PowerShell command (not parsed by Overseer)"},
	},
	AgentCodex: {
		// Codex's hooks name every shell-like call "Bash".
		"Bash":           {Kind: KindShell},
		"exec_command":   {Kind: KindShell, IntentArg: "justification", CwdArg: "workdir"},
		"shell":          {Kind: KindShell, IntentArg: "justification", CwdArg: "workdir"},
		"shell_command":  {Kind: KindShell, IntentArg: "justification", CwdArg: "workdir"},
		"local_shell":    {Kind: KindShell},
		"unified_exec":   {Kind: KindShell},
		"container.exec": {Kind: KindShell},
		// Input to a process the agent started: empty input only reads its
		// output; anything else is judged as the shell command it may be.
		"write_stdin": {Kind: KindOther, Level: Auto, Note: "input to a process the agent started", Alias: map[string]string{"command": "chars"}},
		// Codex's hooks send the patch as "command".
		"apply_patch":                 {Kind: KindFileEdit, Move: map[string]string{"input": "command"}},
		"read_file":                   {Kind: KindFileRead},
		"view_image":                  {Kind: KindFileRead},
		"list_dir":                    {Kind: KindFileRead, Dir: true, Alias: map[string]string{"path": "dir_path"}},
		"grep_files":                  {Kind: KindFileRead, Dir: true},
		"web_search":                  {Kind: KindOther, Level: Notify, Note: "a web search run by the model provider"},
		"update_plan":                 {Kind: KindOther, Level: Auto, Note: "the agent's plan"},
		"request_user_input":          {Kind: KindOther, Level: Auto, Note: "a question the agent asks its user"},
		"spawn_agent":                 {Kind: KindOther, Level: Auto, Note: "a sub-agent, whose own calls are judged one by one"},
		"send_input":                  {Kind: KindOther, Level: Auto, Note: "a message to a sub-agent"},
		"resume_agent":                {Kind: KindOther, Level: Auto, Note: "a sub-agent, whose own calls are judged one by one"},
		"wait":                        {Kind: KindOther, Level: Auto, Note: "waiting for sub-agents"},
		"close_agent":                 {Kind: KindOther, Level: Auto, Note: "the end of a sub-agent"},
		"get_memory":                  {Kind: KindOther, Level: Auto, Note: "a read of the agent's memory"},
		"list_mcp_resources":          {Kind: KindOther, Level: Auto, Note: "a read of the resources MCP servers offer"},
		"list_mcp_resource_templates": {Kind: KindOther, Level: Auto, Note: "a read of the resources MCP servers offer"},
		"read_mcp_resource":           {Kind: KindOther, Level: Auto, Note: "a read of an MCP server's resource", URIArg: "uri"},
	},
	AgentGemini: {
		"run_shell_command":     {Kind: KindShell, CwdArg: "directory", IntentArg: "description"},
		"read_file":             {Kind: KindFileRead, Alias: map[string]string{"file_path": "absolute_path"}},
		"read_many_files":       {Kind: KindFileRead, Dir: true, Contents: true, Patterns: []string{"paths", "include"}},
		"write_file":            {Kind: KindFileWrite, Alias: map[string]string{"file_path": "absolute_path"}},
		"replace":               {Kind: KindFileEdit, Alias: map[string]string{"file_path": "absolute_path"}},
		"list_directory":        {Kind: KindFileRead, Dir: true, Alias: map[string]string{"path": "dir_path"}},
		"glob":                  {Kind: KindFileRead, Dir: true, Patterns: []string{"pattern"}, Alias: map[string]string{"path": "dir_path"}},
		"search_file_content":   {Kind: KindFileRead, Dir: true, Contents: true, Alias: map[string]string{"path": "dir_path"}},
		"grep_search":           {Kind: KindFileRead, Dir: true, Contents: true, Alias: map[string]string{"path": "dir_path"}},
		"web_fetch":             {Kind: KindNetFetch},
		"google_web_search":     {Kind: KindOther, Level: Notify, Note: "a web search run by the model provider"},
		"write_todos":           {Kind: KindOther, Level: Auto, Note: "the agent's todo list"},
		"codebase_investigator": {Kind: KindOther, Level: Auto, Note: "a sub-agent, whose own calls are judged one by one"},
		"delegate_to_agent":     {Kind: KindOther, Level: Auto, Note: "a sub-agent, whose own calls are judged one by one"},
		// save_memory appends to GEMINI.md, which later sessions load as
		// instructions: a person is told.
		"save_memory": {Kind: KindOther, Level: Notify, Note: "a fact saved to the agent's memory file, read by later sessions"},
	},
}

// BuiltinAgents lists the agents of the built-in tool table.
var BuiltinAgents = []string{AgentClaudeCode, AgentCodex, AgentGemini}

// KnownAgent reports whether agent is one of BuiltinAgents.
func KnownAgent(agent string) bool {
	_, ok := builtinTools[agent]
	return ok
}

// ToolTable maps the tools of agents to ToolMappings: entries of
// configuration first (per agent, then for every agent, "*"), then the
// built-in table. A nil *ToolTable is the built-in table alone. It is
// immutable and safe for concurrent use.
type ToolTable struct {
	extra map[string]map[string]ToolMapping
}

// NewToolTable returns the built-in table extended by extra (agent → tool
// → mapping; agent "*" applies to every agent). It validates extra.
func NewToolTable(extra map[string]map[string]ToolMapping) (*ToolTable, error) {
	for agent, tools := range extra {
		if agent != AnyAgent && !KnownAgent(agent) {
			return nil, fmt.Errorf("tools: unknown agent %q (want one of %s, or %q)", agent, strings.Join(BuiltinAgents, ", "), AnyAgent)
		}
		for name, m := range tools {
			if err := m.Validate(); err != nil {
				return nil, fmt.Errorf("tools.%s.%s: %w", agent, name, err)
			}
		}
	}
	return &ToolTable{extra: extra}, nil
}

// Lookup returns the mapping of agent's tool and whether the table has one.
func (t *ToolTable) Lookup(agent, tool string) (ToolMapping, bool) {
	if t != nil {
		if m, ok := t.extra[agent][tool]; ok {
			return m, true
		}
		if m, ok := t.extra[AnyAgent][tool]; ok {
			return m, true
		}
	}
	m, ok := builtinTools[agent][tool]
	return m, ok
}

// Normalize reads a as a call of its agent's own tool: when the table
// knows the tool and the caller left the kind open (empty or "other"), it
// sets the table's kind; it copies the mapping's aliases and moves the
// arguments it renames. It is idempotent: hooks apply it when they build
// the action, and the engine again on whatever reaches it (eval, the HTTP
// API, the MCP gateway, explain). A caller that gives another kind says
// the call is not the agent's own tool (an MCP server's tool that happens
// to be called "Task", as the MCP gateway reports it): the table does not
// apply. It reports whether the table applies.
func (t *ToolTable) Normalize(a *Action) (ToolMapping, bool) {
	m, ok := t.Lookup(a.Agent, a.Tool)
	if !ok || a.Kind != "" && a.Kind != KindOther && a.Kind != m.Kind {
		return ToolMapping{}, false
	}
	if a.Kind == "" || a.Kind == KindOther {
		a.Kind = m.Kind
	}
	if a.Args == nil {
		a.Args = map[string]any{}
	}
	for to, from := range m.Move {
		v, ok := a.Args[from]
		if !ok {
			continue
		}
		if _, set := a.Args[to]; !set {
			a.Args[to] = v
			delete(a.Args, from)
		}
	}
	for to, from := range m.Alias {
		if _, set := a.Args[to]; set {
			continue
		}
		if v, ok := a.Args[from]; ok {
			a.Args[to] = v
		}
	}
	return m, true
}

// DeriveToolFacts fills a.Facts.Paths, when nothing has yet, for a call of
// a tool that m describes: the path arguments (DeriveFileFacts), then the
// reads a directory tool makes (the working directory when it names no
// path), the fixed parts of its glob patterns, and a file:// resource URI.
func DeriveToolFacts(a *Action, m ToolMapping) {
	if len(a.Facts.Paths) > 0 {
		return
	}
	DeriveFileFacts(a)
	if !m.Dir && len(m.Patterns) == 0 && m.URIArg == "" {
		return
	}
	if m.Contents {
		defer func() {
			for i := range a.Facts.Paths {
				if a.Facts.Paths[i].Intent == PathRead {
					a.Facts.Paths[i].Below = true
				}
			}
		}()
	}
	dir := a.Cwd
	hasPath := false
	for _, k := range pathArgKeys {
		if p, ok := a.Args[k].(string); ok && p != "" {
			hasPath = true
			if m.Dir {
				dir = ResolvePath(a.Cwd, p)
			}
			break
		}
	}
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") {
			return
		}
		for _, f := range a.Facts.Paths {
			if f.Path == p && f.Intent == PathRead {
				return
			}
		}
		cwd := filepath.Clean(a.Cwd)
		a.Facts.Paths = append(a.Facts.Paths, PathFact{Path: p, Intent: PathRead,
			InCwd: a.Cwd != "" && filepath.IsAbs(cwd) && Within(cwd, p)})
	}
	patterns := 0
	for _, k := range m.Patterns {
		for _, pat := range stringsOf(a.Args[k]) {
			if pat = strings.TrimSpace(pat); pat == "" {
				continue
			}
			patterns++
			for _, alt := range expandBraces(pat, 32) {
				add(ResolvePath(dir, GlobBase(alt)))
			}
		}
	}
	if m.Dir && !hasPath && patterns == 0 {
		add(ResolvePath(a.Cwd, "."))
	}
	if m.URIArg != "" {
		if s, ok := a.Args[m.URIArg].(string); ok {
			if u, err := url.Parse(s); err == nil && strings.EqualFold(u.Scheme, "file") && u.Path != "" {
				add(filepath.Clean(u.Path))
			}
		}
	}
}

// stringsOf returns v as a list of strings: a string, or the strings of a
// list.
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// expandBraces expands the {a,b} alternatives of a glob pattern, up to
// limit patterns; past the limit (or with an unclosed brace) it returns
// "/": the pattern may read anything.
func expandBraces(pat string, limit int) []string {
	open := strings.IndexByte(pat, '{')
	if open < 0 {
		return []string{pat}
	}
	if len(pat) > 4096 || strings.Count(pat, "{") > 16 {
		return []string{"/"} // too much to expand: judged as reading anything
	}
	depth, end := 0, -1
	var alts []string
	last := open + 1
	for i := open; i < len(pat) && end < 0; i++ {
		switch pat[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				alts = append(alts, pat[last:i])
				end = i
			}
		case ',':
			if depth == 1 {
				alts = append(alts, pat[last:i])
				last = i + 1
			}
		}
	}
	if end < 0 {
		return []string{"/"}
	}
	var out []string
	for _, alt := range alts {
		for _, e := range expandBraces(pat[:open]+alt+pat[end+1:], limit-len(out)) {
			out = append(out, e)
			if len(out) >= limit {
				return []string{"/"}
			}
		}
	}
	return out
}

// GlobBase returns the fixed leading part of a glob pattern: the path up
// to the first element with a wildcard ("src/**/*.go" → "src", "*.go" →
// ".", "/etc/*.conf" → "/etc"). A pattern without wildcards is returned
// as it is.
func GlobBase(pattern string) string {
	if !strings.ContainsAny(pattern, "*?[{") {
		return pattern
	}
	parts := strings.Split(pattern, "/")
	var fixed []string
	for _, p := range parts {
		if strings.ContainsAny(p, "*?[{") {
			break
		}
		fixed = append(fixed, p)
	}
	base := strings.Join(fixed, "/")
	switch {
	case base == "" && strings.HasPrefix(pattern, "/"):
		return "/"
	case base == "":
		return "."
	}
	return base
}

// EffectFree reports whether a, whose facts are derived, changes nothing
// and reaches nothing outside the agent beyond reads inside its working
// directory: no command, no URL, and every path a read in the working
// directory. Such a call of a tool the table gives a level takes that
// level.
func EffectFree(a *Action) bool {
	if len(a.Facts.Commands) > 0 || len(a.Facts.URLs) > 0 {
		return false
	}
	for _, p := range a.Facts.Paths {
		if p.Intent != PathRead || !p.InCwd {
			return false
		}
	}
	return true
}
