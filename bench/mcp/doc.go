// Package mcpbench measures the MCP gateway's overhead: a trivial tool of
// the same upstream server (stdio) called directly and through
// `overseer mcp` (stdio, auditing on), alternately, in one run. See
// run.sh for the summary and the goal (median overhead under 1 ms).
package mcpbench
