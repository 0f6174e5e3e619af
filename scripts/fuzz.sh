#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, docs/fuzzing.md) with clang-14 into ./build-fuzz and
# runs every target for a bounded time: first its fixed inputs (tests/fuzz/regressions/<target>/,
# crashes found before, each must now pass), then libFuzzer over a COPY of its seed corpus
# (tests/fuzz/corpus/<target>/ is never written) with its dictionary (<target>.dict, or
# json_keys.dict for the JSON targets).
# Exits non-zero when any target crashed, leaked, broke a property or timed out; the last line is
# exactly "N passed, N failed" (N = targets).
#
# Usage: scripts/fuzz.sh [--seconds N] [--seed N] [--log-dir DIR] [--keep-corpus] [target...]
#   --seconds N     fuzzing time per target (default 10); the wall time is about
#                   targets × (N + a few seconds) once built
#   --seed N        libFuzzer's random seed (default: a new one each run). A fixed seed makes the
#                   run repeatable: the same inputs in the same order, so a run of N seconds tries
#                   a prefix of what a longer run with that seed tried (scripts/test.sh uses one;
#                   exploration with new seeds is the long run's job, docs/fuzzing.md)
#   --log-dir DIR   keep each target's libFuzzer log (and crash inputs) in DIR (default: a temp dir,
#                   removed at the end unless something failed)
#   --keep-corpus   keep the grown corpus copies in the log dir
#   target...       only these targets (names as in tests/fuzz/CMakeLists.txt, e.g. sse)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=10
seed=()
log_dir=""
keep_corpus=0
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --seconds=*) seconds=${1#*=}; shift ;;
    --seed) seed=(-seed="$2"); shift 2 ;;
    --seed=*) seed=(-seed="${1#*=}"); shift ;;
    --log-dir) log_dir=$2; shift 2 ;;
    --log-dir=*) log_dir=${1#*=}; shift ;;
    --keep-corpus) keep_corpus=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) only+=("$1"); shift ;;
  esac
done
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "--seconds: a whole number of seconds" >&2; exit 2; }

./scripts/install-deps.sh
./scripts/install-fuzz-deps.sh
if [ ! -f build-fuzz/build.ninja ]; then
  CXX=clang++-14 cmake -G Ninja -B build-fuzz -S . -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DTOLLGATE_FUZZ=ON -DTOLLGATE_WERROR=OFF
fi
cmake --build build-fuzz --target fuzz

# Targets that read JSON share one dictionary (no symlinks: a checkout may not keep them).
json_targets=(admin_fields anthropic_stream anthropic_translate json_body upstream_decode)

targets=()
if [ ${#only[@]} -gt 0 ]; then targets=("${only[@]}")
else
  for f in tests/fuzz/*_fuzz.cpp; do n=$(basename "$f" _fuzz.cpp); targets+=("$n"); done
fi

own_log_dir=0
if [ -z "$log_dir" ]; then log_dir=$(mktemp -d /tmp/tollgate-fuzz.XXXXXX); own_log_dir=1; fi
mkdir -p "$log_dir"
work=$(mktemp -d /tmp/tollgate-fuzz-corpus.XXXXXX)
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
started=$(date +%s)
printf '%-20s %6s %12s %9s %7s %8s  %s\n' target result executions exec/s cov ft note
for t in "${targets[@]}"; do
  bin=build-fuzz/fuzz/fuzz_$t
  log="$log_dir/$t.log"
  : > "$log"
  result=pass
  note=""
  if [ ! -x "$bin" ]; then
    result=FAIL; note="no such target"
  else
    # Fixed inputs: every crash found before must stay fixed.
    reg=tests/fuzz/regressions/$t
    if [ -d "$reg" ] && [ -n "$(ls -A "$reg")" ]; then
      if ! timeout 300 "$bin" -runs=1 "$reg"/* >> "$log" 2>&1; then result=FAIL; note="a regression input fails"; fi
    fi
    if [ "$result" = pass ]; then
      corpus="$work/$t"
      mkdir -p "$corpus" "$log_dir/$t-artifacts"
      cp tests/fuzz/corpus/$t/* "$corpus"/ 2>/dev/null || true
      dict=()
      if [ -f tests/fuzz/$t.dict ]; then dict=(-dict=tests/fuzz/$t.dict)
      elif [[ " ${json_targets[*]} " == *" $t "* ]]; then dict=(-dict=tests/fuzz/json_keys.dict); fi
      # -timeout: one input slower than 10 s is a finding; the outer timeout bounds the run.
      if ! timeout $((seconds + 120)) "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
          -print_final_stats=1 -artifact_prefix="$log_dir/$t-artifacts/" "${seed[@]}" "${dict[@]}" "$corpus" >> "$log" 2>&1; then
        result=FAIL
        note="crash: $(ls "$log_dir/$t-artifacts" | head -1)"
      fi
      [ "$keep_corpus" = 1 ] && cp -r "$corpus" "$log_dir/$t-corpus"
    fi
  fi
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | tail -1 | awk '{print $2}')
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  printf '%-20s %6s %12s %9s %7s %8s  %s\n' "$t" "$result" "${execs:--}" "${rate:--}" "${cov:--}" "${ft:--}" "$note"
  if [ "$result" = pass ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "logs: $log_dir ($(( $(date +%s) - started )) s fuzzing)"
[ "$own_log_dir" = 1 ] && [ "$failed" = 0 ] && rm -rf "$log_dir"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
