#!/usr/bin/env bash
# Measures the latency an agent sees from Overseer's hook: the whole hook
# process `overseer init` installs — the lean entry overseer-hook (start,
# read the event, ask the running daemon, print the answer; with no daemon
# it hands the call to `overseer hook`, which judges it in its process) —
# for an action the policy lets through (auto), against `overseer hook`
# run directly, a bare Go program that reads the event and prints a
# decision, and a process that does nothing (`true`), in one run.
#
#   goals: median of the hook process under 15 ms; with and without a
#   daemon at most 3x the bare Go hook; without a daemon at most 24 ms
#
# Usage: bench/hook/run.sh        (N calls each, default 200: N=500 bench/hook/run.sh)
# STRICT=1 makes a missed goal exit non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."

N="${N:-200}"
STRICT="${STRICT:-0}"
GOAL_MS=15
PEER_MS=24

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench '^BenchmarkHookProcess$' -benchtime "${N}x" -count 1 ./bench/hook/ | tee "$out" >/dev/null

# median NAME [UNIT] prints the sub-benchmark's median wall time (or UNIT).
median() { awk -v name="BenchmarkHookProcess/$1" -v unit="${2:-ms/median}" 'index($1, name) == 1 && substr($1, length(name) + 1) ~ /^(-[0-9]+)?$/ { for (i = 2; i < NF; i++) if ($(i + 1) == unit) print $i }' "$out"; }
hook="$(median hook)"
lone="$(median hook-no-daemon)"
full="$(median hook-full)"
fulllone="$(median hook-full-no-daemon)"
bare="$(median bare-go)"
floor="$(median durable-floor)"
noop="$(median true)"
# The CPU time (user + system) of the processes: steadier than wall time
# when other work shares the machine.
hookc="$(median hook ms-cpu/median)"
lonec="$(median hook-no-daemon ms-cpu/median)"
barec="$(median bare-go ms-cpu/median)"
floorc="$(median durable-floor ms-cpu/median)"
fullc="$(median hook-full ms-cpu/median)"
if [ -z "$hook" ] || [ -z "$lone" ] || [ -z "$full" ] || [ -z "$fulllone" ] || [ -z "$bare" ] || [ -z "$noop" ]; then
  cat "$out" >&2
  echo "bench/hook: the benchmark printed no medians" >&2
  exit 1
fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
pass() { awk -v v="$1" -v l="$2" 'BEGIN { print (v <= l) ? "PASS" : "MISS" }'; }
r1="$(ratio "$hook" "$bare")"
r2="$(ratio "$lone" "$bare")"
v1="$(pass "$hook" "$GOAL_MS")"
v2="$(pass "$r1" 3)"
v3="$(pass "$r2" 3)"
v4="$(pass "$lone" "$PEER_MS")"
printf 'hook process (auto, daemon running), median   %8.2f ms   %5sx the bare Go hook\n' "$hook" "$r1"
printf 'hook process, no daemon (judged in-process)   %8.2f ms   %5sx the bare Go hook\n' "$lone" "$r2"
printf '  overseer hook run directly, daemon running  %8.2f ms   %5sx\n' "$full" "$(ratio "$full" "$bare")"
printf '  overseer hook run directly, no daemon       %8.2f ms   %5sx   (the lean entry'"'"'s hand-over adds %.2f ms)\n' \
  "$fulllone" "$(ratio "$fulllone" "$bare")" "$(awk -v a="$lone" -v b="$fulllone" 'BEGIN { print a - b }')"
printf 'bare Go hook (read the event, print a decision) %6.2f ms\n' "$bare"
if [ -n "$floor" ]; then
  # What recording the call durably in-process costs before any judging:
  # the floor under a hook without a daemon (bench/cmd/hookfloor).
  printf 'durable floor (the event committed to SQLite, WAL synced) %6.2f ms   %5sx the bare Go hook%s\n' "$floor" "$(ratio "$floor" "$bare")" \
    "$([ -n "$floorc" ] && [ -n "$barec" ] && printf ', CPU %.2f ms (%sx)' "$floorc" "$(ratio "$floorc" "$barec")")"
fi
printf 'a process that does nothing (true), median    %8.2f ms\n' "$noop"
if [ -n "$hookc" ] && [ -n "$lonec" ] && [ -n "$barec" ]; then
  printf 'CPU time (user+system), medians: hook %.2f ms (%sx), no daemon %.2f ms (%sx), bare Go %.2f ms\n' \
    "$hookc" "$(ratio "$hookc" "$barec")" "$lonec" "$(ratio "$lonec" "$barec")" "$barec"
  [ -n "$fullc" ] && printf 'CPU time of overseer hook run directly, daemon running: %.2f ms (%sx)\n' "$fullc" "$(ratio "$fullc" "$barec")"
fi
printf 'load average (1, 5, 15 min): %s\n' "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a)"
printf '%s  hook median < %d ms  (%s calls each)\n' "$v1" "$GOAL_MS" "$N"
printf '%s  hook with a daemon <= 3x the bare Go hook\n' "$v2"
printf '%s  hook without a daemon <= 3x the bare Go hook\n' "$v3"
printf '%s  hook without a daemon <= %d ms (the peer Rampart'"'"'s hook, 22-24 ms here)\n' "$v4" "$PEER_MS"
if [ "$STRICT" = 1 ] && [ "$v1$v2$v3$v4" != PASSPASSPASSPASS ]; then
  exit 1
fi
