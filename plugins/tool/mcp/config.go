package mcptool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/overseer-dev/overseer/internal/mcpshared"
	"github.com/overseer-dev/overseer/plugin"
)

// Defaults of a zero configuration.
const (
	DefaultCallTimeout    = mcpshared.DefaultCallTimeout
	DefaultRestartInitial = mcpshared.DefaultRestartInitial
	DefaultRestartMax     = mcpshared.DefaultRestartMax
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
// streamable HTTP URL. Hidden turns the server off: it is not started and
// none of its tools are offered. CallTimeout "off" leaves only the
// caller's context to bound a call.
type ServerConfig = mcpshared.Server

// ToolMapping maps a server's tool to a canonical kind.
type ToolMapping = mcpshared.ToolMapping

// Backoff is the restart backoff: Initial, doubling up to Max.
type Backoff = mcpshared.Backoff

// Duration is a time.Duration written as "25s" or "5m" in JSON; "off"
// switches the setting off where that is allowed.
type Duration = mcpshared.Duration

// ParseConfig decodes raw strictly (unknown fields and trailing data are
// errors), expands ${NAME} references to environment variables in
// commands, arguments, environment values, working directories, URLs and
// headers (an unset variable is an error), and validates the result.
func ParseConfig(raw json.RawMessage) (Config, error) {
	return parseConfig(raw, os.LookupEnv)
}

func parseConfig(raw json.RawMessage, lookup func(string) (string, bool)) (Config, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return Config{}, fmt.Errorf("%w: empty configuration (servers are required)", ErrConfig)
	}
	var c Config
	if err := plugin.DecodeConfig(raw, &c); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	servers := make([]*mcpshared.Server, 0, len(c.Servers))
	for _, s := range c.Servers {
		servers = append(servers, s)
	}
	if err := mcpshared.ExpandEnv(servers, lookup); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate reports every problem of c, wrapping ErrConfig.
func (c *Config) Validate() error {
	var errs []string
	if len(c.Servers) == 0 {
		errs = append(errs, "no servers are configured")
	}
	if c.MaxOutputBytes < 0 {
		errs = append(errs, fmt.Sprintf("max_output_bytes %d is negative", c.MaxOutputBytes))
	}
	for _, n := range slices.Sorted(maps.Keys(c.Servers)) {
		errs = append(errs, mcpshared.ValidateServer(n, c.Servers[n])...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrConfig, strings.Join(errs, "\n  "))
	}
	return nil
}
