#!/usr/bin/env bash
# End-to-end suite: the real gateway and simulator driven by the official SDKs.
# Usage: tests/e2e/run.sh BUILD_DIR   (ctest runs it as test `e2e`)
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

for bin in tollgate tollgate-mock; do
  if [[ ! -x "$build_dir/$bin" ]]; then
    echo "e2e: $build_dir/$bin is missing; build it first (ninja -C $build_dir tollgate tollgate-mock)" >&2
    exit 1
  fi
done
if ! command -v node >/dev/null; then
  echo "e2e: node (>= 20) is required" >&2
  exit 1
fi

if [[ ! -d "$here/node_modules/openai" || ! -d "$here/node_modules/@anthropic-ai/sdk" ]]; then
  (cd "$here" && npm ci --no-audit --no-fund)
fi

cd "$root"
export TOLLGATE_BIN="$build_dir/tollgate"
export TOLLGATE_MOCK_BIN="$build_dir/tollgate-mock"
# --test-concurrency exists from Node 20.10; Debian 12's own nodejs (18) runs test files one at a
# time on a 2-core machine anyway (its default is cores - 1).
concurrency=(--test-concurrency=1)
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [[ "$node_major" -lt 20 ]]; then
  echo "e2e: node $(node --version) is older than 20: running without --test-concurrency" >&2
  concurrency=()
fi
exec node --test "${concurrency[@]}" --test-reporter=spec "${@:2}" tests/e2e/*.test.mjs
