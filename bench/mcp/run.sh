#!/usr/bin/env bash
# Measures the MCP gateway's overhead and prints the ratio:
#
#   a trivial tool (echo) of one upstream server over stdio, called
#   directly and through `overseer mcp` (stdio, its kernel on SQLite with
#   the audit log on: every call judged and durably recorded), alternately,
#   in one run.
#
#   goal: median overhead per call under 1 ms
#
# Usage: bench/mcp/run.sh            (from anywhere; about half a minute)
# Tuning (environment): CALLS (default 3000) calls of each kind; STRICT=1
# exits 3 when the goal is missed. It exits 1 when the benchmark fails.
set -uo pipefail
cd "$(dirname "$0")/../.."

CALLS="${CALLS:-3000}"
STRICT="${STRICT:-0}"
OUT="$(mktemp)"
trap 'rm -f "$OUT"' EXIT

echo "MCP gateway overhead — $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc 2>/dev/null || echo '?') cores; $(go version | cut -d' ' -f3-)"
# The load shares the machine with the benchmark: said before and after.
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime | sed 's/.*load average[s]*: //'; }
load_before="$(load)"
if ! go test -count=1 -run '^$' -bench '^BenchmarkOverhead$' -benchtime "${CALLS}x" ./bench/mcp/ | tee "$OUT"; then
  echo "bench/mcp: the benchmark failed" >&2
  exit 1
fi

# metric UNIT prints the value reported as UNIT.
metric() { awk -v unit="$1" '/^BenchmarkOverhead/ { for (i = 2; i < NF; i++) if ($(i + 1) == unit) print $i }' "$OUT" | head -n 1; }
ms() { awk -v n="$1" 'BEGIN { printf "%.3f ms", n / 1e6 }'; }

load_after="$(load)"
direct="$(metric direct-p50-ns)"
direct90="$(metric direct-p90-ns)"
through="$(metric gateway-p50-ns)"
through90="$(metric gateway-p90-ns)"
p99="$(metric gateway-p99-ns)"
over="$(metric overhead-p50-ns)"
over90="$(metric overhead-p90-ns)"
cpu="$(metric gateway-cpu-ns/call)"
paired="$(metric paired-overhead-p50-ns)"
ratio="$(metric ratio)"
if [ -z "$over" ]; then
  echo "bench/mcp: no figures in the benchmark's output" >&2
  exit 1
fi
goal="MISS"
if awk -v v="$over" 'BEGIN { exit !(v < 1e6) }'; then goal="PASS"; fi

echo
echo "==================== summary ===================="
printf '%-40s %s\n' "load average (1, 5, 15 min) before" "$load_before"
printf '%-40s %s\n' "load average (1, 5, 15 min) after" "$load_after"
printf '%-40s %s\n' "direct call, median / p90" "$(ms "$direct") / $(ms "$direct90")"
printf '%-40s %s\n' "through the gateway, median / p90" "$(ms "$through") / $(ms "$through90")"
printf '%-40s %s\n' "through the gateway, p99" "$(ms "$p99")"
printf '%-40s %s\n' "overhead per call, median" "$(ms "$over")"
printf '%-40s %s\n' "overhead per call, p90" "$(ms "$over90")"
printf '%-40s %s\n' "overhead, median of paired calls" "$(ms "$paired")"
printf '%-40s %s\n' "ratio gateway/direct (medians)" "$ratio"
if [ -n "$cpu" ]; then printf '%-40s %s\n' "gateway process CPU per call" "$(ms "$cpu")"; fi
echo "-------------------- goal -----------------------"
printf '%-40s %s\n' "median overhead < 1 ms" "$goal"
if [ "$STRICT" = 1 ] && [ "$goal" != PASS ]; then
  exit 3
fi
exit 0
