// Package mcp holds the MCP gateway's end-to-end tests: the real overseer
// binary (`overseer mcp` over stdio, and the daemon's /mcp over
// streamable HTTP) in front of real MCP servers from npm
// (@modelcontextprotocol/server-filesystem and server-everything), driven
// by the official Go SDK client and by the TypeScript SDK client.
//
// The npm packages are installed by scripts/install-mcp-servers.sh into
// .cache/npm-mcp. When they are missing the tests are skipped with a
// message, except in CI (CI=true), where they fail.
package mcp
