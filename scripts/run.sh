#!/usr/bin/env bash
# Builds Tollgate and starts it on the bundled example config, on 127.0.0.1:4000
# (HOST=0.0.0.0 / PORT=... to change; the example's master key is a published dev key).
#  - With OPENAI_API_KEY set: examples/openai.yaml against the real OpenAI API.
#  - Otherwise: starts the bundled upstream simulator (tollgate-mock) on 127.0.0.1:4010 and
#    serves examples/simulator.yaml, which routes every model group to it.
# Ctrl-C (or SIGTERM to this script) stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
PORT="${PORT:-4000}"
HOST="${HOST:-127.0.0.1}"
if [ -n "${OPENAI_API_KEY:-}" ] && [ -z "${TOLLGATE_USE_SIMULATOR:-}" ]; then
  echo "OPENAI_API_KEY is set: serving examples/openai.yaml against the real OpenAI API"
  exec ./build/tollgate serve --config examples/openai.yaml --host "$HOST" --port "$PORT"
fi
pids=()
cleanup() { [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM
mock_log=$(mktemp)
# examples/simulator.yaml points every deployment at the simulator on 127.0.0.1:4010.
./build/tollgate-mock --host 127.0.0.1 --port 4010 >"$mock_log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  grep -q '^listening on' "$mock_log" && break
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "run.sh: the simulator could not start:" >&2; cat "$mock_log" >&2; exit 1
  fi
  sleep 0.1
done
echo "simulator on 127.0.0.1:4010; gateway on ${HOST}:${PORT}; master key sk-tollgate-dev"
./build/tollgate serve --config examples/simulator.yaml --host "$HOST" --port "$PORT" &
pids+=($!)
wait "${pids[1]}"
