#!/usr/bin/env bash
# Installs what the email answer tests need (internal/frontend/notify): Debian's
# Dovecot IMAP server (dovecot-imapd). The tests run it as a throwaway
# instance in a temporary directory on a random loopback port; the package's
# own system service is not needed and is left as apt set it up.
#
# Idempotent: nothing is installed when dovecot is there already.
#
#   scripts/install-mail-test-tools.sh
set -euo pipefail
if command -v dovecot >/dev/null 2>&1 || [ -x /usr/sbin/dovecot ]; then
  exit 0
fi
echo "install-mail-test-tools: installing dovecot-imapd with apt"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends dovecot-imapd >/dev/null
