// Package builtin is the Tool plugin "tool.builtin": Overseer's own tools
// bash, file_read, file_write, file_edit, web_fetch, sql_query and sql_exec.
//
// The tools execute; they never decide. A call reaches Execute only after
// the firewall let it through, and the guards protect these tools exactly as
// they protect every other agent's (by the call's kind and facts). Where a
// tool needs a safety property to hold at the moment it acts, it uses the
// guards' own mechanisms rather than its own judgement: web_fetch connects
// through the net guard's client (which refuses private addresses at
// connect time), sql_query runs inside a read-only transaction, file paths
// are resolved exactly as the paths guard resolved them.
//
// Data flowing back to the agent is bounded: output beyond
// Config.MaxOutputBytes is cut, and the result says so (a warning line and
// Meta["truncated"]), so the agent knows it did not see everything.
package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
	"unicode/utf8"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/guard/netguard"
	"github.com/overseer-dev/overseer/plugin"
)

// ID is the plugin's registration ID.
const ID = "tool.builtin"

func init() {
	plugin.Register(plugin.Info{ID: ID, New: func(cfg json.RawMessage) (any, error) {
		c, err := ParseConfig(cfg)
		if err != nil {
			return nil, err
		}
		return New(c)
	}})
}

// Tool names.
const (
	ToolBash      = "bash"
	ToolFileRead  = "file_read"
	ToolFileWrite = "file_write"
	ToolFileEdit  = "file_edit"
	ToolWebFetch  = "web_fetch"
	ToolSQLQuery  = "sql_query"
	ToolSQLExec   = "sql_exec"
)

// Defaults and ceilings of Config.
const (
	DefaultMaxOutputBytes = 100 << 10
	DefaultBashTimeout    = 2 * time.Minute
	MaxBashTimeout        = 10 * time.Minute
	DefaultWebMaxBytes    = netguard.DefaultMaxBodyBytes
	DefaultSQLMaxRows     = 500
	// MaxReadBytes is the largest file file_read and file_edit load.
	MaxReadBytes = 64 << 20
)

// Sentinel errors.
var (
	// ErrConfig means the configuration is not valid.
	ErrConfig = errors.New("builtin tools: invalid configuration")
	// ErrUnknownTool means the call names a tool this plugin does not offer.
	ErrUnknownTool = errors.New("builtin tools: unknown tool")
)

// Duration is a time.Duration written as "30s" in JSON.
type Duration time.Duration

// UnmarshalText decodes "30s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText encodes d as "30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Config configures the builtin tools. Zero values take the defaults.
type Config struct {
	// Home is the user's home directory, for "~" in paths (default: the
	// current user's).
	Home string `json:"home,omitempty"`
	// MaxOutputBytes caps the text a tool hands back (default 100 KiB).
	MaxOutputBytes int `json:"max_output_bytes,omitempty"`
	// BashTimeout bounds one bash call (default 2m, at most 10m); a call may
	// ask for less with timeout_seconds.
	BashTimeout Duration `json:"bash_timeout,omitempty"`
	// Net is the net guard policy web_fetch connects under.
	Net netguard.Policy `json:"net,omitzero"`
	// WebMaxBytes caps a fetched body (default and ceiling 1 MiB).
	WebMaxBytes int64 `json:"web_max_bytes,omitempty"`
	// SQL configures sql_query and sql_exec.
	SQL SQLConfig `json:"sql,omitzero"`
}

// SQLConfig configures the SQL tools.
type SQLConfig struct {
	// Driver is the database/sql driver: "sqlite" (the default; the SQLite
	// driver is built in).
	Driver string `json:"driver,omitempty"`
	// DSN is the data source, for SQLite a file path or "file:…" URI. Empty
	// means the SQL tools report they are not configured.
	DSN string `json:"dsn,omitempty"`
	// MaxRows caps the rows sql_query returns (default 500).
	MaxRows int `json:"max_rows,omitempty"`
}

// ParseConfig decodes a configuration strictly: unknown fields are errors.
// An empty input gives the zero Config (all defaults).
func ParseConfig(raw json.RawMessage) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return c, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("%w: trailing data after the object", ErrConfig)
	}
	return c, c.Validate()
}

// Validate reports the first setting that cannot be used.
func (c Config) Validate() error {
	switch {
	case c.MaxOutputBytes < 0:
		return fmt.Errorf("%w: max_output_bytes is negative", ErrConfig)
	case time.Duration(c.BashTimeout) > MaxBashTimeout:
		return fmt.Errorf("%w: bash_timeout %s is over the ceiling of %s", ErrConfig, time.Duration(c.BashTimeout), MaxBashTimeout)
	case c.WebMaxBytes < 0 || c.WebMaxBytes > DefaultWebMaxBytes:
		return fmt.Errorf("%w: web_max_bytes must be between 0 and %d", ErrConfig, DefaultWebMaxBytes)
	case c.SQL.MaxRows < 0:
		return fmt.Errorf("%w: sql.max_rows is negative", ErrConfig)
	case c.SQL.Driver != "" && c.SQL.Driver != "sqlite":
		return fmt.Errorf("%w: sql.driver %q is not built in (want sqlite)", ErrConfig, c.SQL.Driver)
	}
	if err := c.Net.Validate(); err != nil {
		return fmt.Errorf("%w: net: %v", ErrConfig, err)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			c.Home = h
		}
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.BashTimeout == 0 {
		c.BashTimeout = Duration(DefaultBashTimeout)
	}
	if c.WebMaxBytes == 0 {
		c.WebMaxBytes = DefaultWebMaxBytes
	}
	if c.SQL.Driver == "" {
		c.SQL.Driver = "sqlite"
	}
	if c.SQL.MaxRows == 0 {
		c.SQL.MaxRows = DefaultSQLMaxRows
	}
	return c
}

// Tools is the plugin instance: the seven builtin tools under one
// configuration. It holds no per-call state and is safe for concurrent use.
type Tools struct {
	cfg Config
	web webClient
}

var _ plugin.Tool = (*Tools)(nil)

// New builds the tools.
func New(cfg Config) (*Tools, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	t := &Tools{cfg: cfg}
	t.web = newWebClient(cfg)
	return t, nil
}

// Tools implements plugin.Tool.
func (t *Tools) Tools(context.Context) ([]plugin.ToolSpec, error) {
	return Specs(), nil
}

// Spec returns the spec of one builtin tool.
func Spec(name string) (plugin.ToolSpec, bool) {
	for _, s := range Specs() {
		if s.Name == name {
			return s, true
		}
	}
	return plugin.ToolSpec{}, false
}

// Specs lists the builtin tools with their input schemas and kinds.
func Specs() []plugin.ToolSpec {
	return []plugin.ToolSpec{
		{Name: ToolBash, Kind: string(action.KindShell),
			Description: "Run a command with bash -c in the working directory. Output (stdout and stderr together) is capped; the exit status is reported.",
			InputSchema: schema(`{"type":"object","properties":{
				"command":{"type":"string","description":"the command line"},
				"timeout_seconds":{"type":"integer","minimum":1,"description":"stop the command after this many seconds (capped by the configuration)"},
				"description":{"type":"string","description":"what the command is for, in a few words"}},
				"required":["command"],"additionalProperties":false}`)},
		{Name: ToolFileRead, Kind: string(action.KindFileRead),
			Description: "Read a text file. Without offset and limit the whole file is read, which is what allows file_edit to change it afterwards.",
			InputSchema: schema(`{"type":"object","properties":{
				"file_path":{"type":"string","description":"absolute, or relative to the working directory"},
				"offset":{"type":"integer","minimum":1,"description":"first line to read (1-based)"},
				"limit":{"type":"integer","minimum":1,"description":"how many lines to read"}},
				"required":["file_path"],"additionalProperties":false}`)},
		{Name: ToolFileWrite, Kind: string(action.KindFileWrite),
			Description: "Write a file with the given content, creating it (and its directories) or replacing it.",
			InputSchema: schema(`{"type":"object","properties":{
				"file_path":{"type":"string"},
				"content":{"type":"string"}},
				"required":["file_path","content"],"additionalProperties":false}`)},
		{Name: ToolFileEdit, Kind: string(action.KindFileEdit),
			Description: "Replace old_string by new_string in a file you have read in full. old_string must occur exactly once unless replace_all is set.",
			InputSchema: schema(`{"type":"object","properties":{
				"file_path":{"type":"string"},
				"old_string":{"type":"string","minLength":1},
				"new_string":{"type":"string"},
				"replace_all":{"type":"boolean"}},
				"required":["file_path","old_string","new_string"],"additionalProperties":false}`)},
		{Name: ToolWebFetch, Kind: string(action.KindNetFetch),
			Description: "GET a public http(s) URL and return its text. Private and local addresses are refused; at most 5 redirects; the body is capped at 1 MB.",
			InputSchema: schema(`{"type":"object","properties":{
				"url":{"type":"string","description":"an absolute http or https URL"}},
				"required":["url"],"additionalProperties":false}`)},
		{Name: ToolSQLQuery, Kind: string(action.KindSQL),
			Description: "Run one read-only SQL query (SELECT, WITH, EXPLAIN) against the configured database; it runs inside a read-only transaction.",
			InputSchema: schema(`{"type":"object","properties":{
				"query":{"type":"string"},
				"args":{"type":"array","description":"values for ? placeholders"}},
				"required":["query"],"additionalProperties":false}`)},
		{Name: ToolSQLExec, Kind: string(action.KindSQL),
			Description: "Run one SQL write against the configured (staging) database: either a statement in sql, or an optimistic-locking update given table, id, version and set (zero rows updated is an error; no retry).",
			InputSchema: schema(`{"type":"object","properties":{
				"sql":{"type":"string"},
				"args":{"type":"array"},
				"table":{"type":"string"},
				"id_column":{"type":"string","description":"default id"},
				"version_column":{"type":"string","description":"default version"},
				"id":{},
				"version":{"type":"integer"},
				"set":{"type":"object"}},
				"additionalProperties":false}`)},
	}
}

func schema(s string) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		panic(fmt.Sprintf("builtin tools: bad schema: %v", err)) // a programming error, caught by the tests
	}
	return buf.Bytes()
}

// Execute implements plugin.Tool. A failure of the tool's work is a Result
// with IsError (the agent sees it and can correct itself); an error return
// means the call could not be attempted at all (unknown tool).
func (t *Tools) Execute(ctx context.Context, c plugin.Call) (plugin.Result, error) {
	var res plugin.Result
	var err error
	switch c.Tool {
	case ToolBash:
		res, err = t.bash(ctx, c)
	case ToolFileRead:
		res, err = t.fileRead(ctx, c)
	case ToolFileWrite:
		res, err = t.fileWrite(ctx, c)
	case ToolFileEdit:
		res, err = t.fileEdit(ctx, c)
	case ToolWebFetch:
		res, err = t.webFetch(ctx, c)
	case ToolSQLQuery:
		res, err = t.sqlQuery(ctx, c)
	case ToolSQLExec:
		res, err = t.sqlExec(ctx, c)
	default:
		return plugin.Result{}, fmt.Errorf("%w %q", ErrUnknownTool, c.Tool)
	}
	if err != nil {
		return failure("%s: %v", c.Tool, err), nil
	}
	return res, nil
}

// decodeArgs decodes a call's arguments into v, strictly.
func decodeArgs(args map[string]any, v any) error {
	b, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("arguments cannot be encoded: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments: %w", err)
	}
	return nil
}

func failure(format string, a ...any) plugin.Result {
	return plugin.Result{Output: fmt.Sprintf(format, a...), IsError: true}
}

// capOutput cuts s to at most n bytes (at a character boundary) and, when
// it cut, appends a warning saying how much is missing and sets
// meta["truncated"].
func capOutput(s string, n int, meta map[string]any) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	meta["truncated"] = true
	meta["truncated_bytes"] = len(s) - cut
	return s[:cut] + fmt.Sprintf("\n[warning: output truncated: %d of %d bytes shown; the rest was cut at the %d-byte cap]", cut, len(s), n)
}

// cappedBuffer keeps the first max bytes written to it and counts the rest.
type cappedBuffer struct {
	buf     bytes.Buffer
	max     int
	dropped int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - b.buf.Len()
	if room >= len(p) {
		return b.buf.Write(p)
	}
	if room > 0 {
		b.buf.Write(p[:room])
	}
	b.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

// text returns what was kept, with a warning when something was dropped.
func (b *cappedBuffer) text(meta map[string]any) string {
	s := b.buf.String()
	if b.dropped == 0 {
		return s
	}
	meta["truncated"] = true
	meta["truncated_bytes"] = b.dropped
	return trimPartialRune(s) + fmt.Sprintf("\n[warning: output truncated: %d more bytes were cut at the %d-byte cap]", b.dropped, b.max)
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of s (left
// by a byte cap).
func trimPartialRune(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			return s
		}
	}
	return s
}
