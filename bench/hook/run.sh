#!/usr/bin/env bash
# Measures the latency an agent sees from Overseer's hook: the whole
# `overseer hook claude-code` process (start, read the event, ask the
# running daemon, print the answer) for an action the policy lets through
# (auto), against a process that does nothing (`true`), in one run.
#
#   goal: median of the hook process under 15 ms
#
# Usage: bench/hook/run.sh        (N calls each, default 200: N=500 bench/hook/run.sh)
# STRICT=1 makes a missed goal exit non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."

N="${N:-200}"
STRICT="${STRICT:-0}"
GOAL_MS=15

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench '^BenchmarkHookProcess$' -benchtime "${N}x" -count 1 ./bench/hook/ | tee "$out" >/dev/null

median() { awk -v name="BenchmarkHookProcess/$1" 'index($1, name) == 1 { for (i = 2; i < NF; i++) if ($(i + 1) == "ms/median") print $i }' "$out"; }
hook="$(median hook)"
noop="$(median true)"
if [ -z "$hook" ] || [ -z "$noop" ]; then
  cat "$out" >&2
  echo "bench/hook: the benchmark printed no medians" >&2
  exit 1
fi
diff="$(awk -v a="$hook" -v b="$noop" 'BEGIN { printf "%.2f", a - b }')"
verdict="$(awk -v a="$hook" -v g="$GOAL_MS" 'BEGIN { print (a < g) ? "PASS" : "MISS" }')"
printf 'hook process (auto, daemon running), median   %8.2f ms\n' "$hook"
printf 'a process that does nothing (true), median    %8.2f ms\n' "$noop"
printf 'difference                                    %8.2f ms\n' "$diff"
printf '%s  hook median < %d ms  (%s calls each)\n' "$verdict" "$GOAL_MS" "$N"
if [ "$verdict" = MISS ] && [ "$STRICT" = 1 ]; then
  exit 1
fi
