#!/usr/bin/env bash
# Browser tests of the admin UI: playwright-core driving Debian's chromium (headless) against the
# real gateway and simulator of BUILD_DIR, started by tests/e2e/harness.mjs.
# Usage: tests/browser/run.sh BUILD_DIR [node --test args]   (ctest runs it as test `browser`)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../e2e/suite_setup.sh"
suite_setup browser "$@"
chromium=${TOLLGATE_CHROMIUM:-/usr/bin/chromium}
if [[ ! -x "$chromium" ]]; then
  echo "browser: $chromium is missing: apt-get install -y chromium (./scripts/install-deps.sh installs it)" >&2
  exit 1
fi
# This package brings playwright-core (the harness takes the SDKs from tests/e2e).
if [[ ! -d "$here/node_modules/playwright-core" ]]; then (cd "$here" && npm ci --no-audit --no-fund --loglevel=error); fi
exec node --test "${node_test_flags[@]}" "${@:2}" tests/browser/*.test.mjs
