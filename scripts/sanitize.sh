#!/usr/bin/env bash
# Sanitizer runs (issue 14 §2), each from its own build directory with g++ 12 (clang-14 cannot
# compile libstdc++ 12's std::expected, which every folder uses):
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer: every unit suite and
#                              the e2e suite (build-asan/, a full build: ~45 min on 2 cores)
#   scripts/sanitize.sh tsan   ThreadSanitizer: the suites whose tests run threads against one
#                              another — ledger, circuits, rate limits, store writer, server drain
#                              (build-tsan/, only the libraries those need)
#   scripts/sanitize.sh all    both
# Any report fails the run (halt_on_error; -fno-sanitize-recover for UBSan). Needs the services
# the store tests use: run under scripts/test.sh's environment, or it starts them itself.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
"$(pwd)/scripts/install-deps.sh"

if [[ -z "${TOLLGATE_TEST_POSTGRES_URL:-}" ]]; then
  services_env=$(./scripts/services.sh start)
  eval "$services_env"

  trap './scripts/services.sh stop >/dev/null 2>&1 || true' EXIT
fi
export TOLLGATE_REQUIRE_SERVICES=1

configure() {  # configure DIR FLAG
  [[ -f "$1/build.ninja" ]] || cmake -G Ninja -B "$1" -S . -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTOLLGATE_WERROR=ON -DTOLLGATE_BENCH=OFF "-D$2=ON"
}

run_asan() {
  configure build-asan TOLLGATE_SANITIZE
  cmake --build build-asan
  (cd tests/e2e && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; })
  # detect_leaks: the process ends with coroutine frames of connections still open by design
  # (Server::stop abandons them, join() destroys them): leaks are reported, not ignored.
  ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=0 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  TOLLGATE_SANITIZED=asan \
    ctest --test-dir build-asan --output-on-failure --timeout 2400 -j2
}

run_tsan() {
  configure build-tsan TOLLGATE_TSAN
  local suites=(unit_budget unit_policy unit_store unit_http)
  cmake --build build-tsan --target "${suites[@]}"
  local failed=0 passed=0
  for s in "${suites[@]}"; do
    if TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "build-tsan/tests/$s"; then
      passed=$((passed + 1))
    else
      echo "tsan: $s failed" >&2
      failed=$((failed + 1))
    fi
  done
  echo "tsan: $passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}

case "$mode" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all) run_tsan && run_asan ;;
  *) echo "usage: $0 asan|tsan|all" >&2; exit 2 ;;
esac
