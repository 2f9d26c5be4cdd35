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
./scripts/install-mail-test-tools.sh
# PostgreSQL for the shared-store tests (each test process starts its own).
./scripts/install-db-test-tools.sh

# The one build command (README, scripts/run.sh, the end-to-end tests'
# overseertest.Binary): CGO off, the commit stamped for `overseer version`,
# symbols and DWARF stripped and build paths trimmed (a release binary;
# stack traces keep their function names and lines).
BUILD="CGO_ENABLED=0 go build -buildvcs=auto -trimpath -ldflags='-s -w' -o bin/ ./cmd/overseer ./cmd/overseer-hook"
echo "== one build command: ${BUILD}"
for f in README.md scripts/run.sh; do
  if ! grep -qF "$BUILD" "$f"; then
    echo "$f does not build with the project's build command: $BUILD" >&2
    exit 1
  fi
  if grep -n 'go build' "$f" | grep -vF "$BUILD" >&2; then
    echo "$f has another go build command (above); use: $BUILD" >&2
    exit 1
  fi
done

echo "== go mod tidy leaves go.mod and go.sum unchanged"
if ! go mod tidy -diff; then
  echo "go.mod or go.sum is not tidy (the diff above): run go mod tidy and commit the result" >&2
  exit 1
fi

echo "== no merge conflict markers in tracked files"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  if git ls-files -z | xargs -0 grep -IlE '^(<<<<<<<|>>>>>>>) ' -- >&2; then
    echo "the files above hold merge conflict markers: resolve them" >&2
    exit 1
  fi
else
  echo "not a git checkout: skipped"
fi

echo "== go vet"
go vet ./...
# The test build (an injected clock for the end-to-end tests of time rules;
# never shipped, see docs/threat-model.md) is vetted too.
go vet -tags overseer_testclock ./internal/frontend/cli

# The release binary's goal (issue 18): at most 40 MB, and no reachable
# call of a method by reflection (which keeps every method of every type).
echo "== release binary size (bench/size.sh)"
STRICT=1 ./bench/size.sh -n 10

echo "== go test (unit, integration and end-to-end; fuzz seed corpora included)"
go test -count=1 -timeout 20m ./...

# The flood: 64 clients against the real daemon while a person answers; it
# measures the person's latency, so it runs alone. FLOOD_SECONDS=0 skips it.
FLOOD_SECONDS="${FLOOD_SECONDS:-30}"
if [ "$FLOOD_SECONDS" != "0" ]; then
  echo "== load: a ${FLOOD_SECONDS}s flood of the API (quotas, the person's latency, the database's growth)"
  OVERSEER_FLOOD_SECONDS="$FLOOD_SECONDS" go test -count=1 -timeout 10m -run '^TestFloodKeepsThePersonServed$' -v ./cmd/overseer/
fi

# A short coverage-guided fuzz run of each parser, so new crashers are found
# in CI too. FUZZTIME=0 skips it.
FUZZTIME="${FUZZTIME:-2s}"
fuzz_ok=0
fuzz_stopped=()
if [ "$FUZZTIME" != "0" ]; then
  echo "== fuzz (${FUZZTIME} per target)"
  while read -r pkg target; do
    [ -z "$pkg" ] && continue
    log=$(mktemp)
    if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" >"$log" 2>&1; then
      echo "fuzz ${pkg} ${target}: ok"
      fuzz_ok=$((fuzz_ok + 1))
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
      fuzz_stopped+=("${pkg} ${target}")
    fi
    rm -f "$log"
  done < <(grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
      d=$(dirname "$f"); grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //' | sed "s|^|./${d#./} |"
    done | sort -u)
fi
# The summary says what ran: a fuzz target whose engine stopped without a
# failing input is not a failure, but it did not fuzz either.
if [ "${#fuzz_stopped[@]}" -gt 0 ]; then
  echo "== tests passed, but fuzzing was incomplete: ${#fuzz_stopped[@]} of $((fuzz_ok + ${#fuzz_stopped[@]})) fuzz target(s) stopped without a failing input and did not fuzz:"
  printf '   %s\n' "${fuzz_stopped[@]}"
elif [ "$FUZZTIME" = "0" ]; then
  echo "== all tests passed (fuzzing skipped: FUZZTIME=0)"
else
  echo "== all tests passed; fuzzing: ${fuzz_ok} target(s) ran"
fi
