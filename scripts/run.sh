#!/usr/bin/env bash
# Builds Overseer and runs the daemon with its API on the embedded SQLite
# default ($OVERSEER_HOME, default ~/.overseer). Extra arguments go to
# `overseer serve` (e.g. --addr 127.0.0.1:8080).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
CGO_ENABLED=0 go build -buildvcs=auto -trimpath -ldflags='-s -w' -o bin/ ./cmd/overseer ./cmd/overseer-hook
exec ./bin/overseer serve "$@"
