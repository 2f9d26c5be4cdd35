#!/usr/bin/env bash
# Installs what the MCP gateway's end-to-end tests (test/mcp) and benchmark
# (bench/mcp) run against, at pinned versions, into a project-local
# directory (.cache/npm-mcp, ignored by git):
#
#   @modelcontextprotocol/server-filesystem   a real upstream server (files)
#   @modelcontextprotocol/server-everything   a real upstream server (every feature)
#   @modelcontextprotocol/sdk                 the TypeScript SDK, for the node client
#
# Idempotent: packages already installed at the pinned version are not
# installed again.
#
#   scripts/install-mcp-servers.sh          # install (or check)
#   MCP_SERVERS_DIR=/some/dir scripts/...   # install elsewhere
#
# The tests look in .cache/npm-mcp/node_modules (or MCP_SERVERS_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

FS_VERSION="${MCP_FS_VERSION:-2026.8.31}"
EVERYTHING_VERSION="${MCP_EVERYTHING_VERSION:-2026.8.31}"
SDK_VERSION="${MCP_SDK_VERSION:-1.32.2}"
DIR="${MCP_SERVERS_DIR:-.cache/npm-mcp}"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "install-mcp-servers: node and npm are not installed (install Node.js 20 or later)" >&2
  exit 1
fi

mkdir -p "$DIR"
# Keep the cache out of git even where .gitignore does not mention it.
[ -f "$(dirname "$DIR")/.gitignore" ] || printf '*\n' > "$(dirname "$DIR")/.gitignore"
[ -f "$DIR/package.json" ] || printf '{"name":"overseer-mcp-test-peers","private":true}\n' > "$DIR/package.json"

installed() { # name version
  local pj="$DIR/node_modules/$1/package.json"
  [ -f "$pj" ] && grep -q "\"version\": *\"$2\"" "$pj"
}

want=()
installed "@modelcontextprotocol/server-filesystem" "$FS_VERSION" ||
  want+=("@modelcontextprotocol/server-filesystem@$FS_VERSION")
installed "@modelcontextprotocol/server-everything" "$EVERYTHING_VERSION" ||
  want+=("@modelcontextprotocol/server-everything@$EVERYTHING_VERSION")
installed "@modelcontextprotocol/sdk" "$SDK_VERSION" ||
  want+=("@modelcontextprotocol/sdk@$SDK_VERSION")

if [ "${#want[@]}" -gt 0 ]; then
  echo "install-mcp-servers: installing ${want[*]} into $DIR"
  npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error --save-exact "${want[@]}"
fi

for p in server-filesystem server-everything sdk; do
  if [ ! -f "$DIR/node_modules/@modelcontextprotocol/$p/package.json" ]; then
    echo "install-mcp-servers: @modelcontextprotocol/$p is missing after the install" >&2
    exit 1
  fi
done
echo "install-mcp-servers: server-filesystem $FS_VERSION, server-everything $EVERYTHING_VERSION, sdk $SDK_VERSION in $DIR"
