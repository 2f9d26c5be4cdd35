#!/usr/bin/env bash
# Measures the release binary against its goal (<= 40 MB) and says where the
# bytes go: each module's share and the largest packages, and whether the
# linker could drop unused methods.
#
# The release binary is built with the one release command (as
# scripts/test.sh does). A twin built with the same flags but its symbols
# kept (no -s -w) is read with `go tool nm`: every symbol in the file
# (code, read-only data, data; not .bss) is charged to its package, and each
# package is also charged its estimated part of the function tables the
# release binary keeps (.gopclntab and go:func.*, which have no per-package
# symbols): their size times the package's share of the code. Packages are
# grouped into modules with the build's module list (`go version -m`).
#
# The twin is linked with -dumpdep: when a function that calls a method by
# reflection (reflect.Value.Method or MethodByName, as text/template and
# html/template do) is reachable, the linker must keep every exported method
# of every type, which cost this binary 4.5 MB once. The script prints the
# chain of calls that makes it reachable.
#
# Usage: bench/size.sh [-n TOP]   (TOP rows per table, default 25)
# Environment: GOAL_BYTES (default 40000000), STRICT=1 to exit non-zero when
# the goal is missed or unused methods cannot be dropped.
set -euo pipefail
cd "$(dirname "$0")/.."

TOP=25
if [ "${1:-}" = "-n" ] && [ -n "${2:-}" ]; then TOP="$2"; fi
GOAL_BYTES="${GOAL_BYTES:-40000000}"
STRICT="${STRICT:-0}"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

CGO_ENABLED=0 go build -buildvcs=auto -trimpath -ldflags='-s -w' -o "$WORK/overseer" ./cmd/overseer
CGO_ENABLED=0 go build -buildvcs=auto -trimpath -ldflags='-dumpdep' -o "$WORK/overseer-syms" ./cmd/overseer 2>"$WORK/deps.txt"
size="$(stat -c %s "$WORK/overseer")"

go tool nm -size "$WORK/overseer-syms" >"$WORK/nm.txt"
go version -m "$WORK/overseer-syms" | awk '$1 == "dep" || $1 == "mod" { print $2 }' >"$WORK/modules.txt"
main="$(go list -m)"
# The function tables' size, from the symbols that bound them.
pcl0="$(awk '$4 == "runtime.pclntab" { print $1 }' "$WORK/nm.txt")"
pcl1="$(awk '$4 == "runtime.epclntab" { print $1 }' "$WORK/nm.txt")"
pclntab=$((16#${pcl1:-0} - 16#${pcl0:-0}))
# Symbols from runtime.bss to runtime.end take memory, not file bytes.
bss="$(awk '$4 == "runtime.bss" { print $1 }' "$WORK/nm.txt")"

# Symbols -> packages (bytes of code, bytes in all) -> modules.
awk -v main="$main" -v pclntab="$pclntab" -v bss="${bss:-ffffffffffffffff}" -v out="$WORK" '
  function pkgof(n,   p, ls, i, rest, d) {
    sub(/^go:(link|string|itab|func)\./, "", n)
    sub(/^type:\.?(eq|hash)\./, "", n)
    sub(/^type:/, "", n)
    gsub(/^[*(\[\]]+/, "", n)
    p = match(n, /[(\[ ]/); if (p > 0) n = substr(n, 1, p - 1)
    ls = 0; for (i = 1; i <= length(n); i++) if (substr(n, i, 1) == "/") ls = i
    rest = substr(n, ls + 1); d = index(rest, ".")
    return d > 0 ? substr(n, 1, ls + d - 1) : n
  }
  function modof(p,   i, best, bl) {
    best = "Go standard library"; bl = 0
    for (i = 1; i <= nm; i++)
      if ((p == mods[i] || index(p, mods[i] "/") == 1) && length(mods[i]) > bl) { best = mods[i]; bl = length(mods[i]) }
    if (best == main) best = main " (own code)"
    return best
  }
  # hexge: a >= b for hexadecimal addresses (compared as padded text).
  function hexge(a, b) {
    while (length(a) < 16) a = "0" a
    while (length(b) < 16) b = "0" b
    return tolower(a) >= tolower(b)
  }
  FNR == NR { mods[++nm] = $1; next }
  {
    bytes = $2; kind = $3; name = $4
    for (i = 5; i <= NF; i++) name = name " " $i
    if (kind ~ /^[Bb]$/ || bytes == 0 || hexge($1, bss)) next
    if (name == "go:func.*") { funcdata += bytes; next }
    p = pkgof(name)
    all[p] += bytes
    if (kind ~ /^[Tt]$/) { code[p] += bytes; codeTotal += bytes }
  }
  END {
    tables = pclntab + funcdata
    for (p in all) {
      est = all[p] + (codeTotal > 0 ? tables * code[p] / codeTotal : 0)
      pk[p] = est; m = modof(p); mod[m] += est; charged += est
    }
    for (p in pk) printf "%d\t%s\n", pk[p], p > (out "/packages.txt")
    for (m in mod) printf "%d\t%s\n", mod[m], m > (out "/mods.txt")
    printf "%d\n", charged > (out "/charged.txt")
  }' "$WORK/modules.txt" "$WORK/nm.txt"

mb() { awk -v n="$1" 'BEGIN { printf "%.2f MB", n / 1e6 }'; }
table() { # FILE TITLE
  echo "$2"
  sort -rn "$1" | awk -F'\t' -v size="$size" -v top="$TOP" 'NR <= top { printf "  %8.2f MB %5.1f%%  %s\n", $1 / 1e6, 100 * $1 / size, $2 }'
}
charged="$(cat "$WORK/charged.txt")"
echo "release binary (CGO_ENABLED=0 go build -buildvcs=auto -trimpath -ldflags='-s -w'): $(mb "$size") = $size bytes"
echo "goal <= $(mb "$GOAL_BYTES"): $(awk -v s="$size" -v g="$GOAL_BYTES" 'BEGIN { if (s <= g) printf "PASS, %.2f MB to spare", (g - s) / 1e6; else printf "MISS by %.2f MB", (s - g) / 1e6 }'); ratio $(awk -v s="$size" -v g="$GOAL_BYTES" 'BEGIN { printf "%.3f", s / g }')"
echo "charged to packages below: $(mb "$charged"); the rest ($(mb $((size - charged)))) is file layout, type links, build info and symbols the estimate cannot place"
echo
table "$WORK/mods.txt" "by module (symbols plus estimated function tables; % of the release binary):"
echo
table "$WORK/packages.txt" "largest packages:"
echo

# Dead-method elimination: is a reflect method call reachable?
reflectors="$(grep -o '^[^ ]* <ReflectMethod>' "$WORK/deps.txt" | sed 's/ <ReflectMethod>$//' | sort -u || true)"
if [ -z "$reflectors" ]; then
  echo "unused methods: dropped by the linker (no reachable call of a method by reflection)"
  dce=ok
else
  echo "unused methods: KEPT, every exported method of every type stays in the binary, because of:"
  # Methods of reflect.Value itself show up once every method is kept;
  # the cause is the other one.
  first="$(echo "$reflectors" | grep -v '^reflect\.' | head -n 1 || true)"
  [ -n "$first" ] || first="$(echo "$reflectors" | head -n 1)"
  awk -v target="$first" -F' -> ' '
    NR > 1 { f = $1; t = $2; sub(/ <[A-Za-z]*>$/, "", f); sub(/ <[A-Za-z]*>$/, "", t); if (!(t in parent)) parent[t] = f }
    END { t = target; n = 0; while (t != "" && t != "_" && n < 40) { print "    " t; t = parent[t]; n++ } }' "$WORK/deps.txt"
  dce=off
fi

if [ "$STRICT" = 1 ] && { [ "$size" -gt "$GOAL_BYTES" ] || [ "$dce" = off ]; }; then
  exit 1
fi
