#!/usr/bin/env bash
# End-to-end suite: the real gateway and simulator driven by the official SDKs.
# Usage: tests/e2e/run.sh BUILD_DIR [node --test args]   (ctest runs it as test `e2e`)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/suite_setup.sh"
suite_setup e2e "$@"
exec node --test "${node_test_flags[@]}" "${@:2}" tests/e2e/*.test.mjs
