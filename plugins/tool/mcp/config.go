package mcptool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// Defaults of a zero configuration.
const (
	DefaultCallTimeout    = 5 * time.Minute
	DefaultRestartInitial = 500 * time.Millisecond
	DefaultRestartMax     = 30 * time.Second
	DefaultMaxOutputBytes = 100 << 10
)

// Config configures the MCP client: the servers whose tools the agent loop
// may call. Its servers have the shape of the MCP gateway's servers, so one
// configuration converts to the other.
type Config struct {
	// Servers are the MCP servers, by name. The name prefixes their tools:
	// server "fs", tool "write_file" is "fs__write_file".
	Servers map[string]*ServerConfig `json:"servers"`
	// MaxOutputBytes caps the text one call hands back (default 100 KiB);
	// a longer output is cut and the result says so.
	MaxOutputBytes int `json:"max_output_bytes,omitempty"`
}

// ServerConfig is one MCP server: a command speaking MCP over stdio, or a
// streamable HTTP URL.
type ServerConfig struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"` // added to Overseer's environment
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Hidden turns the server off: it is not started and none of its tools
	// are offered.
	Hidden bool `json:"hidden,omitempty"`
	// HideTools are globs on the server's own tool names ("move_*") whose
	// tools are neither offered nor callable.
	HideTools []string `json:"hide_tools,omitempty"`
	// Tools map a tool (by its own name) to a canonical kind and the
	// argument holding its command, path, URL or SQL.
	Tools map[string]ToolMapping `json:"tools,omitempty"`
	// CallTimeout caps one call (default 5m; "off": only the caller's
	// context bounds it).
	CallTimeout Duration `json:"call_timeout,omitzero"`
	// Restart sets the backoff between restarts of a server that keeps
	// failing.
	Restart Backoff `json:"restart,omitzero"`
}

// ToolMapping maps a server's tool to a canonical kind.
type ToolMapping struct {
	Kind action.Kind `json:"kind"`
	// Arg is the argument that holds the command (shell), the path (file
	// kinds), the URL (net_fetch) or the statement (sql).
	Arg string `json:"arg,omitempty"`
}

// Backoff is the restart backoff: Initial, doubling up to Max.
type Backoff struct {
	Initial Duration `json:"initial,omitzero"`
	Max     Duration `json:"max,omitzero"`
}

// Duration is a time.Duration written as "25s" or "5m" in JSON; "off"
// switches the setting off where that is allowed.
type Duration time.Duration

// off is the stored value of "off".
const off = Duration(-1)

// UnmarshalText decodes "25s" or "off".
func (d *Duration) UnmarshalText(b []byte) error {
	s := string(b)
	if s == "off" {
		*d = off
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return fmt.Errorf("bad duration %q: want a positive number with a unit, like \"25s\", or \"off\"", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalText encodes d as "25s" or "off".
func (d Duration) MarshalText() ([]byte, error) {
	if d < 0 {
		return []byte("off"), nil
	}
	return []byte(time.Duration(d).String()), nil
}

// get returns the duration: def when unset, zero when "off".
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

// ParseConfig decodes raw strictly (unknown fields and trailing data are
// errors), expands ${NAME} references to environment variables in
// commands, arguments, environment values, working directories, URLs and
// headers (an unset variable is an error), and validates the result.
func ParseConfig(raw json.RawMessage) (Config, error) {
	return parseConfig(raw, os.LookupEnv)
}

func parseConfig(raw json.RawMessage, lookup func(string) (string, bool)) (Config, error) {
	var c Config
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return Config{}, fmt.Errorf("%w: empty configuration (servers are required)", ErrConfig)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if _, err := dec.Token(); err == nil {
		return Config{}, fmt.Errorf("%w: trailing data after the object", ErrConfig)
	}
	if err := c.expand(lookup); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
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
		missing = compactStrings(missing)
		return fmt.Errorf("environment variable %s is not set", strings.Join(missing, ", "))
	}
	return nil
}

func compactStrings(xs []string) []string {
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// Validate reports every problem of c, wrapping ErrConfig.
func (c *Config) Validate() error {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if len(c.Servers) == 0 {
		bad("no servers are configured")
	}
	if c.MaxOutputBytes < 0 {
		bad("max_output_bytes %d is negative", c.MaxOutputBytes)
	}
	for _, n := range sortedKeys(c.Servers) {
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
		for _, t := range sortedKeys(s.Tools) {
			m := s.Tools[t]
			w := where + ".tools." + t
			switch {
			case !m.Kind.Valid():
				bad("%s: kind %q (want one of %s)", w, m.Kind, kindList())
			case argKinds[m.Kind] && m.Arg == "":
				bad("%s: kind %s needs arg: the argument holding the %s", w, m.Kind, argWhat(m.Kind))
			}
		}
		b := s.Restart
		if b.Initial < 0 || b.Max < 0 {
			bad("%s.restart: \"off\" is not a backoff", where)
		} else if b.Initial > 0 && b.Max > 0 && b.Max < b.Initial {
			bad("%s.restart: max %s is below initial %s", where, time.Duration(b.Max), time.Duration(b.Initial))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrConfig, strings.Join(errs, "\n  "))
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
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
