# Sourced by tests/e2e/run.sh and tests/browser/run.sh (the node suites that drive BUILD_DIR's
# gateway and simulator through tests/e2e/harness.mjs):
#   suite_setup NAME BUILD_DIR
# checks the binaries and node, installs tests/e2e's npm packages (the SDKs the harness imports)
# when missing, exports TOLLGATE_BIN and TOLLGATE_MOCK_BIN, cds to the repository root and sets
# `node_test_flags` (one test file at a time where node supports the flag). Exits on a problem,
# with a message that names the suite.
suite_setup() {
  local name=$1 build_dir
  if [[ $# -lt 2 ]]; then
    echo "usage: tests/$name/run.sh BUILD_DIR [node --test args]" >&2
    exit 2
  fi
  build_dir=$(cd "$2" && pwd)
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  for bin in tollgate tollgate-mock; do
    if [[ ! -x "$build_dir/$bin" ]]; then
      echo "$name: $build_dir/$bin is missing; build it first (ninja -C $build_dir tollgate tollgate-mock)" >&2
      exit 1
    fi
  done
  if ! command -v node >/dev/null; then
    echo "$name: node (>= 20) is required" >&2
    exit 1
  fi
  if [[ ! -d "$root/tests/e2e/node_modules/openai" || ! -d "$root/tests/e2e/node_modules/@anthropic-ai/sdk" ]]; then
    (cd "$root/tests/e2e" && npm ci --no-audit --no-fund --loglevel=error)
  fi
  cd "$root"
  export TOLLGATE_BIN="$build_dir/tollgate"
  export TOLLGATE_MOCK_BIN="$build_dir/tollgate-mock"
  # --test-concurrency exists from Node 20.10; Debian 12's own nodejs (18) runs test files one at
  # a time on a 2-core machine anyway (its default is cores - 1).
  node_test_flags=(--test-concurrency=1 --test-reporter=spec)
  if [[ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]]; then
    echo "$name: node $(node --version) is older than 20: running without --test-concurrency" >&2
    node_test_flags=(--test-reporter=spec)
  fi
}
