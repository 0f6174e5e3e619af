#!/usr/bin/env bash
# Builds Tollgate once and runs every test from that build: unit (GoogleTest), then e2e
# (the real binaries driven by the official openai and @anthropic-ai/sdk npm packages) and the
# web UI's browser tests (playwright-core + Debian's chromium, tests/browser), then a
# short run of every fuzz target from its clang-14 build.
# Installs what it needs (Debian packages, npm packages for tests/e2e) itself, and starts the
# throwaway PostgreSQL and redis servers the tests use (scripts/services.sh), stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
(cd tests/e2e && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; })
(cd tests/browser && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; })
services_env=$(./scripts/services.sh start)
trap './scripts/services.sh stop >/dev/null 2>&1 || true' EXIT
eval "$services_env"
# Every test that needs a server runs here: one that finds none fails instead of skipping.
export TOLLGATE_REQUIRE_SERVICES=1
echo "services: postgres $TOLLGATE_TEST_POSTGRES_URL, redis $TOLLGATE_TEST_REDIS_URL"
ctest --test-dir build --output-on-failure --timeout 1500 -j2 "$@"
# The libFuzzer targets (docs/fuzzing.md): their regression inputs, then a short bounded run each,
# from their own clang-14 build (build-fuzz/), with a fixed seed so that the gate is repeatable
# (scripts/fuzz.sh --seed; the long exploratory runs use new seeds, docs/fuzzing.md).
./scripts/fuzz.sh --seconds 5 --seed 1
