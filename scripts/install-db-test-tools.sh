#!/usr/bin/env bash
# Installs what the PostgreSQL tests need (internal/store/postgres, the
# shared-store tests of the kernel and the end-to-end fleet tests): Debian's
# postgresql package, whose server programs (initdb, pg_ctl, postgres) live
# under /usr/lib/postgresql/<version>/bin. The tests start a throwaway
# cluster of their own (internal/store/pgtest): no cluster of the package is
# created or started here, and none is needed.
#
# PostgreSQL refuses to run as root; the tests then run it as the
# unprivileged user "postgres", which the package creates (and this script
# creates when it is missing).
#
# Idempotent: whatever is installed already is not installed again.
#
#   scripts/install-db-test-tools.sh
set -euo pipefail

have_server() { compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null 2>&1; }

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

if ! have_server; then
  echo "install-db-test-tools: installing postgresql with apt"
  # The package would create and start a cluster of its own ("main"); the
  # tests do not use it, so none is created.
  if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    $SUDO mkdir -p /etc/postgresql-common
    echo 'create_main_cluster = false' | $SUDO tee /etc/postgresql-common/createcluster.conf >/dev/null
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
  echo "install-db-test-tools: creating the unprivileged user postgres"
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin postgres
fi

have_server || { echo "install-db-test-tools: PostgreSQL's initdb is missing after the install" >&2; exit 1; }
bin="$(dirname "$(compgen -G '/usr/lib/postgresql/*/bin/initdb' | sort -V | tail -n 1 || command -v initdb)")"
echo "install-db-test-tools: $("$bin/postgres" --version)"
