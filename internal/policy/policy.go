// Package policy reads, validates and compiles Overseer's policy: the admin
// layer (a YAML file, or the built-in default) and the rules of the user
// layer. A compiled Policy is an immutable snapshot; evaluation only reads it.
//
// Within a layer rules are read top to bottom and the first match wins. A
// rule matches on tool name globs, kinds, agents and an optional CEL
// condition over the action. The engine (package firewall) combines the
// layers; this package only answers "which rule of this list matches".
package policy

import (
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// Layer names.
const (
	LayerAdmin   = "admin"   // the policy file
	LayerBuiltin = "builtin" // the built-in default policy
	LayerUser    = "user"    // rules stored in the database
)

// Rule is one rule as written in a policy file or stored in the user layer.
type Rule struct {
	Name string `yaml:"name" json:"name"`
	// Tool holds globs on the tool name as the agent spelled it
	// (case-insensitive, '*' and '?' as in path.Match). Empty matches any.
	Tool []string `yaml:"tool,omitempty" json:"tool,omitempty"`
	// Kind restricts the rule to these canonical kinds. Empty matches any.
	Kind []action.Kind `yaml:"kind,omitempty" json:"kind,omitempty"`
	// Agent holds globs on the agent name. Empty matches any.
	Agent []string `yaml:"agent,omitempty" json:"agent,omitempty"`
	// Session scopes a user-layer rule to one agent session ("remember for
	// this session"). Empty matches any.
	Session string `yaml:"session,omitempty" json:"session,omitempty"`
	// ArgsHash scopes a rule to one exact call (see action.Action.ArgsHash).
	ArgsHash string `yaml:"args_hash,omitempty" json:"args_hash,omitempty"`
	// When is a CEL expression that must evaluate to true.
	When    string       `yaml:"when,omitempty" json:"when,omitempty"`
	Level   action.Level `yaml:"level" json:"level"`
	Message string       `yaml:"message,omitempty" json:"message,omitempty"`
	// Match and NotMatch are example actions checked when the policy loads:
	// every Match example must be matched by this rule, no NotMatch example
	// may be.
	Match    []Example `yaml:"match,omitempty" json:"match,omitempty"`
	NotMatch []Example `yaml:"not_match,omitempty" json:"not_match,omitempty"`
}

// Example is an example action in a policy file.
type Example struct {
	Tool    string         `yaml:"tool" json:"tool"`
	Kind    action.Kind    `yaml:"kind,omitempty" json:"kind,omitempty"`
	Agent   string         `yaml:"agent,omitempty" json:"agent,omitempty"`
	Session string         `yaml:"session,omitempty" json:"session,omitempty"`
	Cwd     string         `yaml:"cwd,omitempty" json:"cwd,omitempty"`
	Args    map[string]any `yaml:"args,omitempty" json:"args,omitempty"`
	// Level, if set, is the level the whole policy (admin layer alone, no
	// guards) must give this example; checked by `overseer policy test`.
	Level action.Level `yaml:"level,omitempty" json:"level,omitempty"`
}

// Duration is a time.Duration written as "30s", "10m" in YAML and JSON.
type Duration time.Duration

// Settings tune the pipeline. Zero values take the built-in defaults.
type Settings struct {
	Loop    LoopSettings    `yaml:"loop" json:"loop"`
	Meta    MetaSettings    `yaml:"metacognition" json:"metacognition"`
	Gate    GateSettings    `yaml:"approvals" json:"approvals"`
	Adapt   AdaptSettings   `yaml:"adaptation" json:"adaptation"`
	Params  ParamSettings   `yaml:"params" json:"params"`
	Sandbox SandboxSettings `yaml:"sandbox" json:"sandbox"`
	Limits  LimitSettings   `yaml:"limits" json:"limits"`
	// Store is the database: empty (or "sqlite") for the SQLite file in
	// Overseer's home, or a postgres:// URL shared by several instances
	// (see StoreSetting). $OVERSEER_DATABASE_URL, when set, overrides it.
	Store string `yaml:"store" json:"store,omitempty"`
}

// LoopSettings configure L2 repeat detection.
type LoopSettings struct {
	Window   Duration     `yaml:"window" json:"window"`       // default 5m
	SameArgs int          `yaml:"same_args" json:"same_args"` // same tool+args this many times raises; default 3
	SameTool int          `yaml:"same_tool" json:"same_tool"` // same tool this many times raises; default 20
	Level    action.Level `yaml:"level" json:"level"`         // the level raised to; default confirm
	// LowConfidence below which thresholds tighten (each minus one third); default 0.5.
	LowConfidence float64 `yaml:"low_confidence" json:"low_confidence"`
}

// MetaSettings configure L5.
type MetaSettings struct {
	LowConfidence float64 `yaml:"low_confidence" json:"low_confidence"` // default 0.5
	Streak        int     `yaml:"streak" json:"streak"`                 // consecutive low values; default 3
	// Stagnation is how many no-progress notes in a session (repeated or
	// irrelevant results) force at least confirm until a person answers;
	// default 3, -1 turns the check off.
	Stagnation int `yaml:"stagnation" json:"stagnation"`
}

// GateSettings configure the human gate.
type GateSettings struct {
	Timeout Duration `yaml:"timeout" json:"timeout"` // default 10m
	// Default is the answer applied at the timeout: "deny" (default) or "approve".
	Default string `yaml:"default" json:"default"`
}

// AdaptSettings configure the adaptive layer.
type AdaptSettings struct {
	Disabled        bool     `yaml:"disabled" json:"disabled"`
	EscalateAfter   int      `yaml:"escalate_after" json:"escalate_after"`     // consecutive rejections; default 3
	RevertAfter     int      `yaml:"revert_after" json:"revert_after"`         // consecutive approvals after escalation; default 5; -1 never
	HesitationAfter Duration `yaml:"hesitation_after" json:"hesitation_after"` // an answer slower than this is hesitation; default 30s
	// ProposeAfter is how many approvals of one kind of call, with no
	// refusal like them, make Overseer propose a rule for a person to
	// accept (learned trust); default 3, -1 never.
	ProposeAfter int `yaml:"propose_after" json:"propose_after"`
}

// ParamSettings configure L1.
type ParamSettings struct {
	MaxArgBytes int `yaml:"max_arg_bytes" json:"max_arg_bytes"` // default 1 MiB
}

// SandboxSettings configure L4 (issue: hard guards).
type SandboxSettings struct {
	ReadablePaths []string `yaml:"readable_paths" json:"readable_paths"`
	OutputDir     string   `yaml:"output_dir" json:"output_dir"`
}

// LimitSettings bound what agents can make the daemon do and store: the
// quotas of the submission endpoints (per agent session, per agent, and for
// all agents together), the size kept of each action, and the size of the
// database at which a person is alerted. The daemon reads them at start.
type LimitSettings struct {
	// StoredBytes bounds what is stored of one action and of its verdict
	// (JSON); beyond it the longest strings are kept as a prefix with their
	// length and hash. The whole action is still hashed and judged. Default
	// 32 KiB, at least 4 KiB; -1 stores everything.
	StoredBytes int `yaml:"stored_bytes" json:"stored_bytes"`
	// Session, Agent and All are the submission quotas. Agents name
	// themselves and their sessions, so All is what bounds them together.
	Session QuotaSettings `yaml:"session" json:"session"`
	Agent   QuotaSettings `yaml:"agent" json:"agent"`
	All     QuotaSettings `yaml:"all" json:"all"`
	// DatabaseAlarmBytes is the size of the database (with its write-ahead
	// log) at which the daemon alerts a person; default 1 GiB, -1 off.
	DatabaseAlarmBytes int64 `yaml:"database_alarm_bytes" json:"database_alarm_bytes"`
}

// QuotaSettings is one quota: requests per minute with a burst, and request
// bytes per minute (the burst of bytes is one minute's worth). -1 turns a
// figure off.
type QuotaSettings struct {
	ActionsPerMinute int `yaml:"actions_per_minute" json:"actions_per_minute"`
	Burst            int `yaml:"burst" json:"burst"`
	BytesPerMinute   int `yaml:"bytes_per_minute" json:"bytes_per_minute"`
}
