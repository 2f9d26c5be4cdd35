#!/bin/sh
# Regenerates libpg_query.wasm.gz: the PostgreSQL parser (libpg_query),
# compiled to WebAssembly by github.com/wasilibs/go-pgquery at VERSION,
# compressed. Run from this directory after changing VERSION, then update
# wasmSHA256 in pgquery_test.go to the printed digest.
set -eu
VERSION=v0.0.0-20260728010200-155ebad2880e
dir="$(go mod download -json "github.com/wasilibs/go-pgquery@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -n "$dir" ] || { echo "gen.sh: go mod download gave no directory" >&2; exit 1; }
gzip -9 -n -c "$dir/internal/wasm/libpg_query.so" > libpg_query.wasm.gz
sha256sum "$dir/internal/wasm/libpg_query.so"
