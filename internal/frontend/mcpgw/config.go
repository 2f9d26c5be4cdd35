package mcpgw

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/overseer-dev/overseer/internal/action"
)

// ConfigName is the gateway's configuration file in Overseer's home.
const ConfigName = "mcp.yaml"

// ErrInvalidConfig is wrapped by every configuration error.
var ErrInvalidConfig = errors.New("mcp gateway: invalid configuration")

// Defaults of a zero configuration.
const (
	DefaultHold            = 25 * time.Second
	DefaultElicitationHold = 5 * time.Minute
	DefaultCallTimeout     = 5 * time.Minute
	DefaultRestartInitial  = 500 * time.Millisecond
	DefaultRestartMax      = 30 * time.Second
	DefaultPing            = 30 * time.Second
)

// Elicitation modes: the highest level a person may answer through the
// client's own prompt (MCP elicitation).
const (
	ElicitOff     = "off"
	ElicitConfirm = "confirm"
	ElicitApprove = "approve"
)

// Config is the gateway's configuration file ($OVERSEER_HOME/mcp.yaml).
// It is decoded strictly: unknown fields are errors.
type Config struct {
	// Version is the format version: 1 (the default when absent).
	Version int `yaml:"version"`
	// Hold is how long a call that waits for a person stays open before the
	// gateway answers "pending approval <id>" (clients time out after
	// 30–60 s). The identical call, retried, picks up the answer. Default 25s.
	Hold Duration `yaml:"hold"`
	// Elicitation is the highest level a person may answer through the
	// client's own prompt, for clients that support MCP elicitation: off,
	// confirm (the default) or approve.
	Elicitation string `yaml:"elicitation"`
	// ElicitationHold is how long a call of a client on an older protocol
	// version waits on the client's prompt. Default 5m.
	ElicitationHold Duration `yaml:"elicitation_hold"`
	// Agent is the agent name recorded for calls. Default: the client's
	// name from the MCP handshake.
	Agent string `yaml:"agent"`
	// Servers are the upstream MCP servers, by name. The name prefixes
	// their tools: server "fs", tool "write_file" is "fs__write_file".
	Servers map[string]*ServerConfig `yaml:"servers"`
}

// ServerConfig is one upstream MCP server: a command speaking MCP over
// stdio, or a streamable HTTP URL.
type ServerConfig struct {
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"` // added to Overseer's environment
	Cwd     string            `yaml:"cwd"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// Hidden hides the whole server: none of its tools, prompts or
	// resources are listed or callable.
	Hidden bool `yaml:"hidden"`
	// HideTools are globs on the server's own tool names ("move_*") whose
	// tools are not listed or callable.
	HideTools []string `yaml:"hide_tools"`
	// Tools map a tool (by its own name) to a canonical kind and the
	// argument holding the command, path, URL or SQL, so that guards apply.
	Tools map[string]ToolMapping `yaml:"tools"`
	// CallTimeout caps one call to this server. Default 5m.
	CallTimeout Duration `yaml:"call_timeout"`
	// Restart sets the backoff between restarts of a crashed server.
	Restart Backoff `yaml:"restart"`
	// Ping is how often the server is pinged to notice that it stopped
	// answering. Default 30s; "off" never.
	Ping Duration `yaml:"ping"`
}

// ToolMapping maps an upstream tool to a kind.
type ToolMapping struct {
	Kind action.Kind `yaml:"kind"`
	// Arg is the argument that holds the command (shell), the path (file
	// kinds), the URL (net_fetch) or the statement (sql).
	Arg string `yaml:"arg"`
}

// Backoff is the restart backoff: Initial, doubling up to Max.
type Backoff struct {
	Initial Duration `yaml:"initial"`
	Max     Duration `yaml:"max"`
}

// Duration is a time.Duration written as "25s" or "5m"; "off" is zero.
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration like \"25s\"", n.Line)
	}
	if n.Value == "off" || n.Value == "0" {
		*d = Duration(-1)
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v <= 0 {
		return fmt.Errorf("line %d: bad duration %q: want a positive number with a unit, like \"25s\", or \"off\"", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// get returns the duration, def when unset, and zero when "off".
func (d Duration) get(def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return time.Duration(d)
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// argKinds need Arg: the guards cannot find their subject without it.
var argKinds = map[action.Kind]bool{action.KindShell: true, action.KindNetFetch: true, action.KindSQL: true}

// LoadConfig reads and validates a configuration file. Environment
// references written ${NAME} in commands, arguments, environment values,
// working directories, URLs and headers are expanded; a reference to an
// unset variable is an error.
func LoadConfig(file string) (*Config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the MCP gateway configuration: %w", err)
	}
	return ParseConfig(file, b, os.LookupEnv)
}

// ParseConfig decodes and validates a configuration. lookup resolves
// ${NAME} references (nil: none are allowed).
func ParseConfig(name string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s: the file is empty", ErrInvalidConfig, name)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s: more than one YAML document", ErrInvalidConfig, name)
	}
	if err := c.expand(lookup); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, name, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &c, nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func (c *Config) expand(lookup func(string) (string, bool)) error {
	var missing []string
	ex := func(s string) string {
		return envRef.ReplaceAllStringFunc(s, func(m string) string {
			name := m[2 : len(m)-1]
			if lookup != nil {
				if v, ok := lookup(name); ok {
					return v
				}
			}
			missing = append(missing, name)
			return m
		})
	}
	for _, s := range c.Servers {
		if s == nil {
			continue
		}
		s.Command, s.Cwd, s.URL = ex(s.Command), ex(s.Cwd), ex(s.URL)
		for i := range s.Args {
			s.Args[i] = ex(s.Args[i])
		}
		for k, v := range s.Env {
			s.Env[k] = ex(v)
		}
		for k, v := range s.Headers {
			s.Headers[k] = ex(v)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("environment variable %s is not set", strings.Join(dedup(missing), ", "))
	}
	return nil
}

func dedup(xs []string) []string {
	var out []string
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// Validate reports every problem of c, wrapping ErrInvalidConfig.
func (c *Config) Validate() error {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if c.Version != 0 && c.Version != 1 {
		bad("version %d (want 1)", c.Version)
	}
	switch c.Elicitation {
	case "", ElicitOff, ElicitConfirm, ElicitApprove:
	default:
		bad("elicitation %q (want off, confirm or approve)", c.Elicitation)
	}
	if time.Duration(c.Hold) > 10*time.Minute {
		bad("hold %s is over 10m", time.Duration(c.Hold))
	}
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := c.Servers[n]
		where := "servers." + n
		if !serverName.MatchString(n) || strings.Contains(n, "__") {
			bad("%s: bad server name (letters, digits, '-' and '_', at most 32, no \"__\")", where)
		}
		if s == nil {
			bad("%s: empty", where)
			continue
		}
		switch {
		case s.Command == "" && s.URL == "":
			bad("%s: needs a command (stdio) or a url (streamable HTTP)", where)
		case s.Command != "" && s.URL != "":
			bad("%s: has both a command and a url", where)
		case s.URL != "":
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad("%s: url %q is not an http(s) URL", where, s.URL)
			}
			if len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
				bad("%s: args, env and cwd are for command servers", where)
			}
		default:
			if len(s.Headers) > 0 {
				bad("%s: headers are for url servers", where)
			}
		}
		for _, g := range s.HideTools {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				bad("%s.hide_tools: bad glob %q", where, g)
			}
		}
		tools := make([]string, 0, len(s.Tools))
		for t := range s.Tools {
			tools = append(tools, t)
		}
		sort.Strings(tools)
		for _, t := range tools {
			m := s.Tools[t]
			w := where + ".tools." + t
			switch {
			case !m.Kind.Valid():
				bad("%s: kind %q (want one of %s)", w, m.Kind, kindList())
			case argKinds[m.Kind] && m.Arg == "":
				bad("%s: kind %s needs arg: the argument holding the %s", w, m.Kind, argWhat(m.Kind))
			}
		}
		if b := s.Restart; b.Initial > 0 && b.Max > 0 && b.Max < b.Initial {
			bad("%s.restart: max %s is below initial %s", where, time.Duration(b.Max), time.Duration(b.Initial))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrInvalidConfig, strings.Join(errs, "\n  "))
	}
	return nil
}

func kindList() string {
	ks := make([]string, len(action.Kinds))
	for i, k := range action.Kinds {
		ks[i] = string(k)
	}
	return strings.Join(ks, ", ")
}

func argWhat(k action.Kind) string {
	switch k {
	case action.KindShell:
		return "command line"
	case action.KindNetFetch:
		return "URL"
	case action.KindSQL:
		return "SQL"
	}
	return "path"
}

// elicitMax is the highest level answerable by elicitation (Unset: none).
func (c *Config) elicitMax() action.Level {
	switch c.Elicitation {
	case ElicitOff:
		return action.Unset
	case ElicitApprove:
		return action.Approve
	}
	return action.Confirm
}

// hidden reports whether the server's own tool name is hidden by config.
func (s *ServerConfig) hidden(tool string) bool {
	if s.Hidden {
		return true
	}
	for _, g := range s.HideTools {
		if ok, _ := path.Match(g, tool); ok {
			return true
		}
	}
	return false
}
