#!/usr/bin/env bash
# Builds Tollgate and starts it on the bundled example config.
#  - With OPENAI_API_KEY set: examples/openai.yaml against the real OpenAI API.
#  - Otherwise: starts the bundled upstream simulator (tollgate-mock) on port 4010 and serves
#    examples/simulator.yaml, which routes every model group to it.
# The gateway listens on port 4000 (override with PORT=...). Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
PORT="${PORT:-4000}"
if [ -n "${OPENAI_API_KEY:-}" ] && [ -z "${TOLLGATE_USE_SIMULATOR:-}" ]; then
  echo "OPENAI_API_KEY is set: serving examples/openai.yaml against the real OpenAI API"
  exec ./build/tollgate serve --config examples/openai.yaml --port "$PORT"
fi
# examples/simulator.yaml points every deployment at the simulator on 127.0.0.1:4010.
./build/tollgate-mock --host 127.0.0.1 --port 4010 >/dev/null &
mock_pid=$!
trap 'kill $mock_pid 2>/dev/null || true' EXIT INT TERM
echo "simulator on :4010; gateway on :${PORT}; master key sk-tollgate-dev"
./build/tollgate serve --config examples/simulator.yaml --port "$PORT"
