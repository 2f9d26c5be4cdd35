#!/usr/bin/env bash
# Runs every test of the project. Installs what the tests need first
# (idempotently), so it works on a fresh machine and in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== installing test tools (idempotent)"
# Real peers for the end-to-end tests: agent CLIs, MCP servers, a browser
# and tmux. Each script installs only what is missing.
./scripts/install-agent-clis.sh
./scripts/install-mcp-servers.sh
./scripts/install-web-test-tools.sh

echo "== go vet"
go vet ./...

echo "== go test (unit, integration and end-to-end; fuzz seed corpora included)"
go test -count=1 -timeout 20m ./...

# A short coverage-guided fuzz run of each parser, so new crashers are found
# in CI too. FUZZTIME=0 skips it.
FUZZTIME="${FUZZTIME:-2s}"
if [ "$FUZZTIME" != "0" ]; then
  echo "== fuzz (${FUZZTIME} per target)"
  while read -r pkg target; do
    [ -z "$pkg" ] && continue
    log=$(mktemp)
    if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" >"$log" 2>&1; then
      echo "fuzz ${pkg} ${target}: ok"
    elif grep -q "Failing input written to" "$log"; then
      # A real finding: the crasher is now in the package's testdata.
      cat "$log"
      echo "fuzz ${pkg} ${target}: FOUND A FAILING INPUT" >&2
      rm -f "$log"
      exit 1
    else
      # The fuzzing engine itself gave up (for example its coordinator timed
      # out on a loaded machine): no input failed. Say so loudly, go on.
      tail -5 "$log"
      echo "fuzz ${pkg} ${target}: WARNING: the fuzzer stopped without a failing input (see above)" >&2
    fi
    rm -f "$log"
  done < <(grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
      d=$(dirname "$f"); grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //' | sed "s|^|./${d#./} |"
    done | sort -u)
fi
echo "== all tests passed"
