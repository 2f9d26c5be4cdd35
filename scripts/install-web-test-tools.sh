#!/usr/bin/env bash
# Installs what the people's-side end-to-end tests need (test/web and the
# terminal UI tests in internal/frontend/tui):
#
#   - Debian's chromium (headless browser, /usr/bin/chromium) and tmux, via apt;
#   - playwright-core from npm, pinned, into a project-local directory
#     (.cache/npm-playwright, ignored by git). It drives the system Chromium;
#     it never downloads a browser of its own.
#
# Idempotent: whatever is installed already is not installed again.
#
#   scripts/install-web-test-tools.sh
#   PLAYWRIGHT_DIR=/some/dir scripts/install-web-test-tools.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PLAYWRIGHT_VERSION="${PLAYWRIGHT_VERSION:-1.64.1}"
DIR="${PLAYWRIGHT_DIR:-.cache/npm-playwright}"

apt_missing=()
command -v chromium >/dev/null 2>&1 || apt_missing+=(chromium)
command -v tmux >/dev/null 2>&1 || apt_missing+=(tmux)
if [ "${#apt_missing[@]}" -gt 0 ]; then
  echo "install-web-test-tools: installing ${apt_missing[*]} with apt"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${apt_missing[@]}" >/dev/null
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "install-web-test-tools: npm is not installed (install Node.js 20 or later)" >&2
  exit 1
fi
mkdir -p "$DIR"
# Keep the cache out of git even where .gitignore does not mention it.
[ -f "$(dirname "$DIR")/.gitignore" ] || printf '*\n' > "$(dirname "$DIR")/.gitignore"
[ -f "$DIR/package.json" ] || printf '{"name":"overseer-web-tests","private":true}\n' > "$DIR/package.json"
pj="$DIR/node_modules/playwright-core/package.json"
if ! { [ -f "$pj" ] && grep -q "\"version\": *\"$PLAYWRIGHT_VERSION\"" "$pj"; }; then
  echo "install-web-test-tools: installing playwright-core@$PLAYWRIGHT_VERSION into $DIR"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
    --save-exact "playwright-core@$PLAYWRIGHT_VERSION"
fi

for b in chromium tmux; do
  command -v "$b" >/dev/null 2>&1 || { echo "install-web-test-tools: $b is missing after the install" >&2; exit 1; }
done
[ -f "$pj" ] || { echo "install-web-test-tools: $pj is missing after the install" >&2; exit 1; }
echo "install-web-test-tools: $(chromium --version 2>/dev/null | head -1), tmux $(tmux -V | cut -d' ' -f2), playwright-core $PLAYWRIGHT_VERSION in $DIR"
