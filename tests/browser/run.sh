#!/usr/bin/env bash
# Browser tests of the admin UI: playwright-core driving Debian's chromium (headless) against the
# real gateway and simulator of BUILD_DIR, started by tests/e2e/harness.mjs.
# Usage: tests/browser/run.sh BUILD_DIR [node --test args]   (ctest runs it as test `browser`)
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
    echo "browser: $build_dir/$bin is missing; build it first" >&2
    exit 1
  fi
done
chromium=${TOLLGATE_CHROMIUM:-/usr/bin/chromium}
if [[ ! -x "$chromium" ]]; then
  echo "browser: $chromium is missing: apt-get install -y chromium (./scripts/install-deps.sh installs it)" >&2
  exit 1
fi
# The harness (tests/e2e) imports the SDKs from its own node_modules; this package brings playwright-core.
if [[ ! -d "$root/tests/e2e/node_modules/openai" ]]; then (cd "$root/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error); fi
if [[ ! -d "$here/node_modules/playwright-core" ]]; then (cd "$here" && npm ci --no-audit --no-fund --loglevel=error); fi
cd "$root"
export TOLLGATE_BIN="$build_dir/tollgate"
export TOLLGATE_MOCK_BIN="$build_dir/tollgate-mock"
exec node --test --test-concurrency=1 --test-reporter=spec "${@:2}" tests/browser/*.test.mjs
