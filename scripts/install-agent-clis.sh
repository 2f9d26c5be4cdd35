#!/usr/bin/env bash
# Installs the agent CLIs that the end-to-end hook tests (test/agents) run:
# Claude Code, OpenAI Codex CLI and Gemini CLI, at pinned versions, into a
# project-local directory (.cache/npm, ignored by git). Idempotent: a version
# already installed is not installed again.
#
#   scripts/install-agent-clis.sh          # install (or check) both
#   AGENT_CLIS_DIR=/some/dir scripts/...   # install elsewhere
#
# The tests find the binaries in .cache/npm/node_modules/.bin (or on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_CODE_VERSION="${CLAUDE_CODE_VERSION:-2.1.328}"
CODEX_VERSION="${CODEX_VERSION:-0.169.0}"
GEMINI_VERSION="${GEMINI_VERSION:-0.61.0}"
DIR="${AGENT_CLIS_DIR:-.cache/npm}"

if ! command -v npm >/dev/null 2>&1; then
  echo "install-agent-clis: npm is not installed (install Node.js 20 or later)" >&2
  exit 1
fi

mkdir -p "$DIR"
# Keep the cache out of git even where .gitignore does not mention it.
[ -f "$(dirname "$DIR")/.gitignore" ] || printf '*\n' > "$(dirname "$DIR")/.gitignore"
[ -f "$DIR/package.json" ] || printf '{"name":"overseer-agent-clis","private":true}\n' > "$DIR/package.json"

installed() { # name version
  local pj="$DIR/node_modules/$1/package.json"
  [ -f "$pj" ] && grep -q "\"version\": *\"$2\"" "$pj"
}

want=()
installed "@anthropic-ai/claude-code" "$CLAUDE_CODE_VERSION" || want+=("@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION")
installed "@openai/codex" "$CODEX_VERSION" || want+=("@openai/codex@$CODEX_VERSION")
installed "@google/gemini-cli" "$GEMINI_VERSION" || want+=("@google/gemini-cli@$GEMINI_VERSION")

if [ "${#want[@]}" -gt 0 ]; then
  echo "install-agent-clis: installing ${want[*]} into $DIR"
  npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error --save-exact "${want[@]}"
fi

for b in claude codex gemini; do
  if [ ! -x "$DIR/node_modules/.bin/$b" ]; then
    echo "install-agent-clis: $DIR/node_modules/.bin/$b is missing after the install" >&2
    exit 1
  fi
done
echo "install-agent-clis: claude-code $CLAUDE_CODE_VERSION, codex $CODEX_VERSION, gemini-cli $GEMINI_VERSION in $DIR/node_modules/.bin"
