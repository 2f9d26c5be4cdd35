// Package mcpshared holds what Overseer's two MCP clients share: the MCP
// gateway (internal/frontend/mcpgw), which fronts MCP servers for outside
// agents, and the tool.mcp plugin (plugins/tool/mcp), which offers them to
// Overseer's own agent loop.
//
// Both describe a server the same way ([Server]: a stdio command or a
// streamable HTTP URL, hidden tools, tool-to-kind mappings, a call timeout
// and a restart backoff), validate it with the same rules
// ([ValidateServer]), expand ${NAME} references the same way
// ([ExpandEnv]), reach it through the same transports ([Transport]) and
// read a tool result as text the same way ([Text]). The gateway decodes its
// configuration from YAML and the plugin from JSON: every type here
// decodes from both.
//
// The package makes no security decision; it only describes and reaches
// servers.
package mcpshared

import "time"

// Defaults of a server whose settings are unset.
const (
	DefaultCallTimeout    = 5 * time.Minute
	DefaultRestartInitial = 500 * time.Millisecond
	DefaultRestartMax     = 30 * time.Second
)

// ProtocolVersion is the protocol version asked of servers: the last
// session-based one, which every current server supports. One session per
// server carries the list notifications, and a call costs less than with
// the per-request metadata of the newest version.
const ProtocolVersion = "2025-11-25"

// ConnectTimeout caps one connection attempt (process start, handshake and
// listing).
const ConnectTimeout = 30 * time.Second

// StableAfter is how long a connection must last for the restart backoff
// to start over.
const StableAfter = time.Minute

// Sep separates a server's name from its tool's name: server "fs", tool
// "write_file" is offered as "fs__write_file".
const Sep = "__"
