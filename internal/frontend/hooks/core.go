package hooks

import "github.com/overseer-dev/overseer/internal/frontend/hookcore"

// The event, the tool table, the configuration and the answers live in
// package hookcore, which the lean hook entry shares; they are named here
// as before.

// Agent names, as used in `overseer hook <agent>` and recorded as
// Action.Agent.
const (
	ClaudeCode = hookcore.ClaudeCode
	Codex      = hookcore.Codex
	Gemini     = hookcore.Gemini
)

// Agents lists the supported agents.
var Agents = hookcore.Agents

// Sentinel errors of ParseEvent and of the configuration.
var (
	ErrUnknownAgent = hookcore.ErrUnknownAgent
	ErrEmptyInput   = hookcore.ErrEmptyInput
	ErrBadInput     = hookcore.ErrBadInput
	ErrUnknownEvent = hookcore.ErrUnknownEvent
	ErrNoTool       = hookcore.ErrNoTool
	ErrConfig       = hookcore.ErrConfig
)

type (
	// Phase: see hookcore.Phase.
	Phase = hookcore.Phase
	// Event: see hookcore.Event.
	Event = hookcore.Event
	// Mapping: see hookcore.Mapping.
	Mapping = hookcore.Mapping
	// Table: see hookcore.Table.
	Table = hookcore.Table
	// Config: see hookcore.Config.
	Config = hookcore.Config
	// ConfirmMode: see hookcore.ConfirmMode.
	ConfirmMode = hookcore.ConfirmMode
	// Duration: see hookcore.Duration.
	Duration = hookcore.Duration
	// Outcome: see hookcore.Outcome.
	Outcome = hookcore.Outcome
	// Decision: see hookcore.Decision.
	Decision = hookcore.Decision
	// Response: see hookcore.Response.
	Response = hookcore.Response
)

// Phases, confirm modes and outcomes.
const (
	PhasePre    = hookcore.PhasePre
	PhasePost   = hookcore.PhasePost
	ConfirmHold = hookcore.ConfirmHold
	ConfirmAsk  = hookcore.ConfirmAsk
	Deny        = hookcore.Deny
	Allow       = hookcore.Allow
	Ask         = hookcore.Ask
)

// Limits and defaults.
const (
	AnyAgent       = hookcore.AnyAgent
	ConfigFile     = hookcore.ConfigFile
	DefaultMaxWait = hookcore.DefaultMaxWait
	MaxInput       = hookcore.MaxInput
)

// Functions of hookcore.
var (
	ActionID    = hookcore.ActionID
	CanAsk      = hookcore.CanAsk
	Failure     = hookcore.Failure
	KnownAgent  = hookcore.KnownAgent
	LoadConfig  = hookcore.LoadConfig
	NewTable    = hookcore.NewTable
	ParseConfig = hookcore.ParseConfig
	ParseEvent  = hookcore.ParseEvent
	Render      = hookcore.Render
)
