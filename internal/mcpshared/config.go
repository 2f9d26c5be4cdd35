package mcpshared

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/lazyre"
)

// Server is one MCP server: a command speaking MCP over stdio, or a
// streamable HTTP URL. It decodes from YAML (the gateway's mcp.yaml) and
// from JSON (the tool.mcp plugin's configuration) with the same field
// names.
type Server struct {
	Command string            `yaml:"command" json:"command,omitempty"`
	Args    []string          `yaml:"args" json:"args,omitempty"`
	Env     map[string]string `yaml:"env" json:"env,omitempty"` // added to Overseer's environment
	Cwd     string            `yaml:"cwd" json:"cwd,omitempty"`
	URL     string            `yaml:"url" json:"url,omitempty"`
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// Hidden hides the whole server: none of its tools (and, in the
	// gateway, prompts or resources) are offered or callable.
	Hidden bool `yaml:"hidden" json:"hidden,omitempty"`
	// HideTools are globs on the server's own tool names ("move_*") whose
	// tools are neither offered nor callable.
	HideTools []string `yaml:"hide_tools" json:"hide_tools,omitempty"`
	// Tools map a tool (by its own name) to a canonical kind and the
	// argument holding its command, path, URL or SQL, so that guards apply.
	Tools map[string]ToolMapping `yaml:"tools" json:"tools,omitempty"`
	// CallTimeout caps one call to this server. Default 5m.
	CallTimeout Duration `yaml:"call_timeout" json:"call_timeout,omitzero"`
	// Restart sets the backoff between restarts of a server that stopped
	// or keeps failing.
	Restart Backoff `yaml:"restart" json:"restart,omitzero"`
}

// ToolMapping maps a server's tool to a canonical kind.
type ToolMapping struct {
	Kind action.Kind `yaml:"kind" json:"kind"`
	// Arg is the argument that holds the command (shell), the path (file
	// kinds), the URL (net_fetch) or the statement (sql).
	Arg string `yaml:"arg" json:"arg,omitempty"`
}

// Backoff is the restart backoff: Initial, doubling up to Max.
type Backoff struct {
	Initial Duration `yaml:"initial" json:"initial,omitzero"`
	Max     Duration `yaml:"max" json:"max,omitzero"`
}

// Range returns the first delay and the ceiling, with the defaults for
// what is unset; the ceiling is never below the first delay.
func (b Backoff) Range() (initial, ceiling time.Duration) {
	initial = b.Initial.Get(DefaultRestartInitial)
	return initial, max(b.Max.Get(DefaultRestartMax), initial)
}

// Duration is a time.Duration written as "25s" or "5m"; "off" (and, in
// YAML, 0) switches the setting off where that is allowed. The zero value
// means unset.
type Duration time.Duration

// Off is the stored value of "off".
const Off = Duration(-1)

// UnmarshalYAML implements yaml.Unmarshaler. Its errors carry the line.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration like \"25s\"", n.Line)
	}
	if n.Value == "0" {
		*d = Off
		return nil
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = v
	return nil
}

// UnmarshalText implements encoding.TextUnmarshaler (JSON strings).
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalText implements encoding.TextMarshaler: "25s" or "off".
func (d Duration) MarshalText() ([]byte, error) {
	if d < 0 {
		return []byte("off"), nil
	}
	return []byte(time.Duration(d).String()), nil
}

// ParseDuration reads "off" or a positive duration with a unit ("25s").
func ParseDuration(s string) (Duration, error) {
	if s == "off" {
		return Off, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("bad duration %q: want a positive number with a unit, like \"25s\", or \"off\"", s)
	}
	return Duration(v), nil
}

// Get returns the duration: def when unset, zero when "off".
func (d Duration) Get(def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return time.Duration(d)
}

// Hides reports whether the server's own tool name is hidden by the
// configuration (the whole server, or a matching hide_tools glob).
func (s *Server) Hides(tool string) bool {
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

var serverName = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// argKinds need Arg: the guards cannot find their subject without it.
var argKinds = map[action.Kind]bool{action.KindShell: true, action.KindNetFetch: true, action.KindSQL: true}

// ValidateServer returns every problem of the server configured under
// name (s may be nil: "empty"), each starting with "servers.<name>", in a
// stable order. None means valid.
func ValidateServer(name string, s *Server) []string {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	where := "servers." + name
	// A name ending in '_' would make offered names ambiguous: server "a"
	// offering "_x" and server "a_" offering "x" are both "a___x", and one
	// would shadow the other. Without it, the first "__" of an offered name
	// ends the server's name.
	if !serverName.MatchString(name) || strings.Contains(name, Sep) || strings.HasSuffix(name, "_") {
		bad("%s: bad server name (letters, digits, '-' and '_', at most 32, no \"__\", not ending in '_')", where)
	}
	if s == nil {
		bad("%s: empty", where)
		return errs
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
	for _, t := range slices.Sorted(maps.Keys(s.Tools)) {
		m := s.Tools[t]
		w := where + ".tools." + t
		switch {
		case !m.Kind.Valid():
			bad("%s: kind %q (want one of %s)", w, m.Kind, kindList())
		case argKinds[m.Kind] && m.Arg == "":
			bad("%s: kind %s needs arg: the argument holding the %s", w, m.Kind, argWhat(m.Kind))
		}
	}
	// "off" is no backoff: a server that keeps failing would be restarted
	// in a tight loop.
	if b := s.Restart; b.Initial < 0 || b.Max < 0 {
		bad("%s.restart: \"off\" is not a backoff", where)
	} else if b.Initial > 0 && b.Max > 0 && b.Max < b.Initial {
		bad("%s.restart: max %s is below initial %s", where, time.Duration(b.Max), time.Duration(b.Initial))
	}
	return errs
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

var envRef = lazyre.New(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// ExpandEnv replaces the ${NAME} references in the servers' commands,
// arguments, environment values, working directories, URLs and headers
// with lookup's values (nil servers are skipped; a nil lookup resolves
// nothing). A reference lookup does not resolve is left as it is, and the
// error names every such variable, sorted.
func ExpandEnv(servers []*Server, lookup func(string) (string, bool)) error {
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
	for _, s := range servers {
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
		slices.Sort(missing)
		return fmt.Errorf("environment variable %s is not set", strings.Join(slices.Compact(missing), ", "))
	}
	return nil
}
