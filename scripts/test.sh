#!/usr/bin/env bash
# Builds Tollgate once and runs every test from that build: unit (GoogleTest), then e2e
# (the real binaries driven by the official openai and @anthropic-ai/sdk npm packages).
# Installs what it needs (Debian packages, npm packages for tests/e2e) itself.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
(cd tests/e2e && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; })
ctest --test-dir build --output-on-failure --timeout 1500 -j2 "$@"
