#!/usr/bin/env bash
# Installs every Debian 12 package Tollgate needs to build, test and benchmark (chromium: the
# browser tests of the web UI, tests/browser).
# Idempotent: skips apt when everything is already there. Run as root (or with sudo).
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config git curl ca-certificates
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libboost-system1.81-dev
  libssl-dev libsqlite3-dev zlib1g-dev libyaml-cpp-dev libspdlog-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev sqlite3 faketime libfaketime
  postgresql-15 libpq-dev redis-server libhiredis-dev
  nodejs npm nginx wrk prometheus
  chromium
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from outside Debian's packages (a newer node with its own npm): accept it.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
