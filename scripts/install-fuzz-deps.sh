#!/usr/bin/env bash
# Installs the Debian 12 packages of the fuzz build (scripts/fuzz.sh, docs/fuzzing.md): clang 14,
# libFuzzer and the sanitizer runtimes. Idempotent: skips apt when everything is already there.
# Run as root (or with sudo).
set -euo pipefail
packages=(clang-14 libfuzzer-14-dev libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
