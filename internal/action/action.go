// Package action defines the canonical Action that every interception point
// builds, the risk Levels, and the Verdict the firewall returns for an action.
//
// It is the vocabulary shared by adapters, guards, the policy store, the
// firewall engine and the human gate; it holds data and small pure helpers
// only, never a decision.
package action

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Level is the risk level of an action, ordered from least to most strict.
//
// The zero value is Unset, which is not a permission: code that meets an
// Unset level where a decision is needed must treat it as needing a person
// (see Level.OrStrict).
type Level uint8

const (
	Unset   Level = iota // no decision; never a permission
	Auto                 // run
	Notify               // run and tell a person
	Confirm              // wait for a person's yes or no
	Approve              // show the full preview, wait for a person
	Block                // never runs
)

var levelNames = [...]string{"unset", "auto", "notify", "confirm", "approve", "block"}

// String returns the level's lower-case name.
func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// ParseLevel parses a level name (case-insensitive). "unset" is not accepted.
func ParseLevel(s string) (Level, error) {
	ls := strings.ToLower(strings.TrimSpace(s))
	for i, n := range levelNames {
		if i > 0 && n == ls {
			return Level(i), nil
		}
	}
	return Unset, fmt.Errorf("unknown level %q (want one of auto, notify, confirm, approve, block)", s)
}

// Valid reports whether l is one of the five real levels.
func (l Level) Valid() bool { return l >= Auto && l <= Block }

// RunsWithoutPerson reports whether an action at this level may proceed
// without a person's answer (auto or notify).
func (l Level) RunsWithoutPerson() bool { return l == Auto || l == Notify }

// NeedsPerson reports whether the level waits for a person (confirm, approve).
func (l Level) NeedsPerson() bool { return l == Confirm || l == Approve }

// OrStrict returns l, or Approve when l is not a valid level: an undecided
// action is put to a person, never let through.
func (l Level) OrStrict() Level {
	if !l.Valid() {
		return Approve
	}
	return l
}

// Max returns the stricter of the levels.
func Max(levels ...Level) Level {
	var m Level
	for _, l := range levels {
		if l > m {
			m = l
		}
	}
	return m
}

// MarshalText encodes the level as its name.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText decodes a level name; an empty string decodes to Unset.
func (l *Level) UnmarshalText(b []byte) error {
	if len(b) == 0 || string(b) == "unset" {
		*l = Unset
		return nil
	}
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Kind is the canonical kind of an action, independent of how the agent
// spelled the tool's name.
type Kind string

const (
	KindShell      Kind = "shell"
	KindFileRead   Kind = "file_read"
	KindFileWrite  Kind = "file_write"
	KindFileEdit   Kind = "file_edit"
	KindFileDelete Kind = "file_delete"
	KindNetFetch   Kind = "net_fetch"
	KindSQL        Kind = "sql"
	KindMCP        Kind = "mcp"
	KindPrompt     Kind = "prompt"
	KindOther      Kind = "other"
)

// Kinds lists every canonical kind.
var Kinds = []Kind{KindShell, KindFileRead, KindFileWrite, KindFileEdit, KindFileDelete,
	KindNetFetch, KindSQL, KindMCP, KindPrompt, KindOther}

// Valid reports whether k is a canonical kind.
func (k Kind) Valid() bool {
	for _, c := range Kinds {
		if k == c {
			return true
		}
	}
	return false
}

// Action is one thing an agent wants to do, in canonical form.
type Action struct {
	// ID is Overseer's id for the action, minted by the kernel when the
	// action is judged: never the caller's.
	ID string `json:"id,omitempty"`
	// ClientID is the caller's own id for the call (a correlation id: the
	// hook's call id, an API client's request id). Overseer keeps it, shows
	// it and can look an action up by it within its session, but it is
	// never a key: several actions may carry the same one.
	ClientID string `json:"client_id,omitempty"`
	Agent    string `json:"agent,omitempty"`   // e.g. "claude-code", "codex", "overseer"
	Session  string `json:"session,omitempty"` // the agent's session id
	// SubagentID and SubagentType name the sub-agent that makes the call,
	// when the entry point reports one (Claude Code's hooks: agent_id and
	// agent_type); empty for the main agent. Grants select on them.
	SubagentID   string         `json:"subagent_id,omitempty"`
	SubagentType string         `json:"subagent_type,omitempty"`
	ToolUseID    string         `json:"tool_use_id,omitempty"` // the agent's id for this call
	Tool         string         `json:"tool"`                  // tool name as the agent spelled it
	Kind         Kind           `json:"kind,omitempty"`
	Args         map[string]any `json:"args"`
	Cwd          string         `json:"cwd,omitempty"`
	// Confidence is the decider's self-reported confidence in [0,1], if any.
	Confidence *float64 `json:"confidence,omitempty"`
	// Intent is what the agent said the call is for, if it said.
	Intent string `json:"intent,omitempty"`
	// HumanRequested means the decider asked for a person to look before
	// the call runs. It can only raise the level.
	HumanRequested bool      `json:"human_requested,omitempty"`
	Time           time.Time `json:"time,omitempty"`
	// Facts are derived by analyzers; adapters leave them empty.
	Facts Facts `json:"facts,omitempty"`
	// Cut is set on a stored copy that was shortened to the storage bound
	// (see Bounded); adapters leave it empty.
	Cut *Cut `json:"cut,omitempty"`
}

// Facts are what the analyzers derived from an action's arguments. Guards and
// rule conditions read them instead of re-parsing raw arguments.
type Facts struct {
	// Commands are the simple commands of a shell action, one per segment,
	// after unwrapping lists, pipes, substitutions and wrappers.
	Commands []Command `json:"commands,omitempty"`
	// Paths are the file system paths the action touches, resolved.
	Paths []PathFact `json:"paths,omitempty"`
	// Later are the paths that commands the action plants for a later
	// program to run would touch (a skill's !`command`, an install script,
	// a hook command written into a file): nothing touches them now, and
	// they are judged only for what must never happen outside Overseer's
	// view (its own state, control files, secrets, catastrophic deletes).
	Later []PathFact `json:"later_paths,omitempty"`
	// URLs the action fetches or sends to.
	URLs []string `json:"urls,omitempty"`
	// SQLClass is the statement class of an SQL action ("read", "write", "ddl", ...).
	SQLClass string `json:"sql_class,omitempty"`
	// Notes are free-form observations of the analyzers ("unparseable", ...).
	Notes []string `json:"notes,omitempty"`
}

// Command is one simple command of a shell line.
type Command struct {
	Name string   `json:"name"`           // the resolved program name (basename)
	Args []string `json:"args,omitempty"` // the literal arguments, where static
	// Dynamic is true when the name or an argument could not be resolved
	// statically (built from a substitution or variable).
	Dynamic bool `json:"dynamic,omitempty"`
	// Stdin is the file its standard input is redirected from (< FILE),
	// when static: absolute, or as written under ~ or an unknown
	// directory.
	Stdin string `json:"stdin,omitempty"`
	// PipedFiles are, for a command that sends data over the network, the
	// files that the stages before it in its pipeline read: what a pipe
	// may carry into it (cat notes.txt | curl -d @- …).
	PipedFiles []string `json:"piped_files,omitempty"`
	// LocalCluster is true for a kubectl or helm command the shell guard
	// found to act on a cluster on this machine, whose API server
	// ~/.kube/config puts on the loopback interface (kind, k3d, minikube,
	// Docker Desktop): the built-in deploy rule spares it. Only the shell
	// guard sets it.
	LocalCluster bool `json:"local_cluster,omitempty"`
	// Quiet is true for a command the shell guard judged at auto on its
	// own (a read, echo, true): L2 leaves it out of a call's shape, so
	// that a no-op added to a looping command does not make it a new
	// kind of call. Only the shell guard sets it; it is never read from
	// a caller.
	Quiet bool `json:"-"`
}

// valueOptions are, by program, the options before a subcommand that take
// the next argument as their value (git -C DIR push).
var valueOptions = map[string][]string{
	"git": {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"},
}

// Sub returns c's subcommand: its first argument that is not an option,
// after the program's own options and their values (git -C ../lib push →
// "push", git stash push → "stash"), as written (a variable's text when
// it is one); "" when there is none. Only a program listed in
// valueOptions has options with separate values skipped; for any other, a
// value given apart from its option is taken for the subcommand.
func (c Command) Sub() string {
	skip := valueOptions[c.Name]
	for i := 0; i < len(c.Args); i++ {
		a := c.Args[i]
		if a == "--" {
			if i+1 < len(c.Args) {
				return c.Args[i+1]
			}
			return ""
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return a
		}
		for _, o := range skip {
			if a == o {
				i++ // its value
				break
			}
		}
	}
	return ""
}

// PathIntent says what an action does to a path.
type PathIntent string

const (
	PathRead   PathIntent = "read"
	PathWrite  PathIntent = "write"
	PathDelete PathIntent = "delete"
	// PathUnknown is a path given to a program whose effect on it is not
	// known (an unknown program, or an option outside the program's spec):
	// it is presumed to be read and written. Protections judge it as a
	// write; nothing is snapshotted for undo.
	PathUnknown PathIntent = "unknown"
)

// PathFact is a path an action touches.
type PathFact struct {
	Path   string     `json:"path"` // absolute, cleaned, symlinks resolved where possible
	Intent PathIntent `json:"intent"`
	InCwd  bool       `json:"in_cwd"` // inside the action's working directory
	// Created is set by the engine on a path that an earlier action of the
	// same session created (a scratch directory the agent made).
	Created bool `json:"created,omitempty"`
	// Below is set on a read whose tool reads the content of every file
	// below Path (Claude Code's Grep, Gemini CLI's search_file_content and
	// read_many_files): what is below counts as read.
	Below bool `json:"below,omitempty"`
	// Template is set by the shell guard on a write that only copies a
	// template git tracks beside the file (cp .env.example .env): the
	// template's path. The paths guard lets such a write of a secret file
	// that does not exist yet through without a person.
	Template string `json:"template,omitempty"`
}

// Canonical returns the JSON encoding of v with object keys sorted, which is
// what hashes are computed over. encoding/json sorts map keys; structs are
// encoded in field order, which is fixed.
func Canonical(v any) ([]byte, error) {
	return json.Marshal(v)
}

// ArgsHash is the hash an approval is bound to: the tool, the kind, the
// working directory and the exact arguments. An action whose arguments differ
// in any byte has a different hash, so it cannot ride on an old approval.
func (a *Action) ArgsHash() string {
	b, err := Canonical(struct {
		Tool string         `json:"tool"`
		Kind Kind           `json:"kind"`
		Cwd  string         `json:"cwd"`
		Args map[string]any `json:"args"`
	}{a.Tool, a.Kind, a.Cwd, a.Args})
	if err != nil {
		// Unencodable arguments hash to a value that nothing else can produce,
		// so no approval can match them.
		return "unhashable:" + err.Error()
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// StringArg returns args[key] when it is a string.
func (a *Action) StringArg(keys ...string) (string, bool) {
	for _, k := range keys {
		if v, ok := a.Args[k].(string); ok {
			return v, true
		}
	}
	return "", false
}

// Source says where a reason or decision came from: its provenance.
type Source string

const (
	SourceRule     Source = "rule"     // a policy rule (admin or user layer)
	SourceDefault  Source = "default"  // a per-kind default
	SourceGuard    Source = "guard"    // a hard guard
	SourceAdaptive Source = "adaptive" // the adaptive layer
	SourceLoop     Source = "loop"     // L2 behaviour detection
	SourceSandbox  Source = "sandbox"  // L4 path sandbox
	SourceMeta     Source = "meta"     // L5 metacognition
	SourceParams   Source = "params"   // L1 argument checks
	SourceError    Source = "error"    // an evaluation error (fails closed)
	SourceHuman    Source = "human"    // a person's answer
	SourceAgent    Source = "agent"    // the agent itself asked a person (a question, a task to confirm)
	SourceGrant    Source = "grant"    // delegated mode: a grant let the call run, or its edge was reached
	SourcePaused   Source = "paused"   // the agent is paused until a person resumes it
	SourceLimit    Source = "limit"    // a rate limit (hybrid controls)
	SourceBudget   Source = "budget"   // a budget cap (hybrid controls)
)

// Reason is one finding that contributed to a verdict.
type Reason struct {
	Layer       string `json:"layer"`                  // "L1".."L5"
	Source      Source `json:"source"`                 // provenance
	Name        string `json:"name,omitempty"`         // rule or guard name
	PolicyLayer string `json:"policy_layer,omitempty"` // "admin", "user" or "builtin" for rules
	Level       Level  `json:"level"`                  // the level this finding asks for
	Message     string `json:"message"`
}

// Preview shows a person what an action would do.
type Preview struct {
	Summary string   `json:"summary"`
	Items   []string `json:"items,omitempty"` // e.g. files a delete would remove
	More    int      `json:"more,omitempty"`  // items not listed
	Diff    string   `json:"diff,omitempty"`  // e.g. the diff an edit makes
}

// Lines renders the preview as plain text for a person: "Preview: " and
// the summary, at most maxItems items indented (then how many more there
// are), and the diff, clipped to maxDiff runes.
func (p *Preview) Lines(maxItems, maxDiff int) []string {
	if p == nil {
		return nil
	}
	out := []string{"Preview: " + p.Summary}
	for i, it := range p.Items {
		if i == maxItems {
			out = append(out, fmt.Sprintf("  … and %d more", len(p.Items)-maxItems+p.More))
			break
		}
		out = append(out, "  "+it)
	}
	if len(p.Items) <= maxItems && p.More > 0 {
		out = append(out, fmt.Sprintf("  … and %d more", p.More))
	}
	if p.Diff != "" {
		diff := strings.TrimRight(p.Diff, "\n")
		if r := []rune(diff); len(r) > maxDiff {
			diff = string(r[:maxDiff]) + "…"
		}
		out = append(out, strings.Split(diff, "\n")...)
	}
	return out
}

// Verdict is the firewall's decision on one action.
type Verdict struct {
	ActionID string   `json:"action_id,omitempty"`
	Level    Level    `json:"level"`
	Reasons  []Reason `json:"reasons"`
	Preview  *Preview `json:"preview,omitempty"`
	// Decider is the reason that set the level: the verdict's provenance.
	Decider *Reason `json:"decider,omitempty"`
	// ArgsHash binds an approval to the exact arguments judged.
	ArgsHash string `json:"args_hash"`
	// Hints are messages for the agent (for example: explain your intent first).
	Hints []string `json:"hints,omitempty"`
	// Cut is set on a stored copy that was shortened to the storage bound
	// (see Bounded).
	Cut *Cut `json:"cut,omitempty"`
	// Stop asks the agent to stop its task, not only this call: it keeps
	// repeating a call a person refused.
	Stop bool `json:"stop,omitempty"`
}

// Allowed reports whether the action may proceed without a person.
func (v *Verdict) Allowed() bool { return v.Level.RunsWithoutPerson() }

// Summary is a one-line human-readable account of the verdict.
func (v *Verdict) Summary() string {
	if v.Decider == nil {
		return v.Level.String()
	}
	name := string(v.Decider.Source)
	if v.Decider.Name != "" {
		name += " " + v.Decider.Name
	}
	return fmt.Sprintf("%s (%s): %s", v.Level, name, v.Decider.Message)
}

// wellKnownKinds maps tool names that agents commonly use to their kind.
// Adapters and policies can extend the mapping; this is only the default.
var wellKnownKinds = map[string]Kind{
	"bash": KindShell, "shell": KindShell, "exec_command": KindShell, "run_shell_command": KindShell,
	"run_command": KindShell, "terminal": KindShell, "local_shell": KindShell,
	"read": KindFileRead, "file_read": KindFileRead, "read_file": KindFileRead, "view": KindFileRead,
	"write": KindFileWrite, "file_write": KindFileWrite, "write_file": KindFileWrite, "create_file": KindFileWrite,
	"edit": KindFileEdit, "multiedit": KindFileEdit, "file_edit": KindFileEdit, "edit_file": KindFileEdit,
	"replace": KindFileEdit, "notebookedit": KindFileEdit, "apply_patch": KindFileEdit,
	"file_delete": KindFileDelete, "delete_file": KindFileDelete,
	"webfetch": KindNetFetch, "web_fetch": KindNetFetch, "fetch": KindNetFetch, "http_request": KindNetFetch,
	"sql_query": KindSQL, "sql_exec": KindSQL,
}

// InferKind returns the kind of a well-known tool name (case-insensitive),
// KindMCP for names of the form mcp__server__tool, and KindOther otherwise.
func InferKind(tool string) Kind {
	t := strings.ToLower(tool)
	if k, ok := wellKnownKinds[t]; ok {
		return k
	}
	if strings.HasPrefix(t, "mcp__") {
		return KindMCP
	}
	return KindOther
}

// envTemplateSuffixes are the suffixes of the templates projects keep for
// their .env files.
var envTemplateSuffixes = []string{".example", ".sample", ".template", ".dist"}

// EnvTemplate reports whether tmpl is a template of the env file dst: the
// same directory, dst's name starts with ".env" and tmpl's is dst's with a
// template suffix.
func EnvTemplate(tmpl, dst string) bool {
	if filepath.Dir(tmpl) != filepath.Dir(dst) || !strings.HasPrefix(filepath.Base(dst), ".env") {
		return false
	}
	for _, s := range envTemplateSuffixes {
		if filepath.Base(tmpl) == filepath.Base(dst)+s {
			return true
		}
	}
	return false
}
