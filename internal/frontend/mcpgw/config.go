package mcpgw

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/mcpshared"
)

// ConfigName is the gateway's configuration file in Overseer's home.
const ConfigName = "mcp.yaml"

// ErrInvalidConfig is wrapped by every configuration error.
var ErrInvalidConfig = errors.New("mcp gateway: invalid configuration")

// Defaults of a zero configuration.
const (
	DefaultHold            = 25 * time.Second
	DefaultElicitationHold = 5 * time.Minute
	DefaultCallTimeout     = mcpshared.DefaultCallTimeout
	DefaultRestartInitial  = mcpshared.DefaultRestartInitial
	DefaultRestartMax      = mcpshared.DefaultRestartMax
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
	// client's own prompt, for clients that support MCP elicitation: off
	// (the default), confirm or approve. An answer through the client is
	// only as trustworthy as the client: any program on this machine can
	// speak MCP to the gateway (the daemon's /mcp needs no credential, and
	// a program can start "overseer mcp" itself), and one the agent wrote
	// answers yes to its own calls. Turn it on only where agents cannot run
	// programs of their own.
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
// stdio, or a streamable HTTP URL (the fields of [mcpshared.Server], shared
// with the tool.mcp plugin), and how often it is pinged.
type ServerConfig struct {
	mcpshared.Server `yaml:",inline"`
	// Ping is how often the server is pinged to notice that it stopped
	// answering. Default 30s; "off" never.
	Ping Duration `yaml:"ping"`
}

// ToolMapping maps an upstream tool to a kind.
type ToolMapping = mcpshared.ToolMapping

// Backoff is the restart backoff: Initial, doubling up to Max.
type Backoff = mcpshared.Backoff

// Duration is a time.Duration written as "25s" or "5m"; "off" (or 0) is
// off.
type Duration = mcpshared.Duration

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

func (c *Config) expand(lookup func(string) (string, bool)) error {
	servers := make([]*mcpshared.Server, 0, len(c.Servers))
	for _, s := range c.Servers {
		if s != nil {
			servers = append(servers, &s.Server)
		}
	}
	return mcpshared.ExpandEnv(servers, lookup)
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
	for _, n := range slices.Sorted(maps.Keys(c.Servers)) {
		var srv *mcpshared.Server
		if s := c.Servers[n]; s != nil {
			srv = &s.Server
		}
		errs = append(errs, mcpshared.ValidateServer(n, srv)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrInvalidConfig, strings.Join(errs, "\n  "))
	}
	return nil
}

// elicitMax is the highest level answerable by elicitation (Unset: none,
// the default).
func (c *Config) elicitMax() action.Level {
	switch c.Elicitation {
	case ElicitConfirm:
		return action.Confirm
	case ElicitApprove:
		return action.Approve
	}
	return action.Unset
}
