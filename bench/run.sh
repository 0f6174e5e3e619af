#!/usr/bin/env bash
# Tollgate load benchmark: direct-to-simulator vs. nginx reverse proxy vs. Tollgate (master key,
# no budget) vs. Tollgate with a budgeted virtual key ("tollgate+budget": admission + durable ledger).
#
#   bench/run.sh [--build-dir DIR] [--write-results] [--duration S] [--rate RPS] [--no-stream] [--no-micro]
#                [--portkey PATH] [--keep-tmp]
#
# Starts tollgate-mock (zero latency), Tollgate and Debian's nginx on free loopback ports, all on
# this machine in this run; creates a virtual key with max_budget through Tollgate's admin API;
# then, for each target in turn (direct, nginx, tollgate, tollgate+budget, tollgate+telemetry:
# a second Tollgate exporting spans to a local OTLP sink and writing the access log): warm-up, throughput
# at 32 connections (wrk) and a short streaming throughput run; then latency at a fixed offered
# rate (bench/fixed_rate.mjs) in rounds interleaved over the targets; then the peak RSS of each
# process, Tollgate's group-commit figures (GET /tollgate/stats) and, if it is built, the ledger
# micro benchmark. With --portkey PATH (the `build/start-server.js` of npm's @portkey-ai/gateway;
# bench/README.md) Portkey's gateway is measured as a peer in the same runs, routed to the same
# simulator by its x-portkey-provider / x-portkey-custom-host headers. Prints a markdown report with ratios and the goals of issues 2 and 3;
# --write-results also puts it in bench/RESULTS.md (a section per date, replaced on re-runs).
# Environment: BUILD_DIR, DURATION, WARMUP, RATE, ROUNDS, LAT_DURATION, STREAM_DURATION,
# MOCK_THREADS (defaults below). See bench/README.md. Every process started here is stopped on
# exit (trap), even on failure; the temp dir is kept on failure or with --keep-tmp.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$ROOT/bench"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
WRITE_RESULTS=0
KEEP_TMP=0
STREAM=1
MICRO=1
CONNS=32                       # wrk -c and the generator's maxSockets (the issue: "at 32 connections")
WRK_THREADS=2                  # wrk -t
DURATION="${DURATION:-10}"     # seconds of the wrk throughput run
WARMUP="${WARMUP:-3}"          # seconds of wrk warm-up per target, not measured
RATE="${RATE:-500}"            # offered rate of the fixed-rate runs, requests/s
ROUNDS="${ROUNDS:-3}"          # fixed-rate rounds, interleaved over the targets
LAT_DURATION="${LAT_DURATION:-5}"  # seconds per fixed-rate round (after a 1 s unmeasured lead-in)
STREAM_DURATION="${STREAM_DURATION:-5}"
MOCK_THREADS="${MOCK_THREADS:-2}"
CPU_RATE="${CPU_RATE:-1500}"     # offered rate of the telemetry CPU rounds, requests/s
CPU_ROUNDS="${CPU_ROUNDS:-6}"    # telemetry CPU rounds, each tollgate then tollgate+telemetry
CPU_DURATION="${CPU_DURATION:-4}"  # seconds per target per telemetry CPU round
MASTER_KEY="sk-bench-master-key"
PORTKEY=""                     # --portkey: Portkey's start-server.js (a peer target), or empty

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) BUILD_DIR="$(cd "$2" && pwd)"; shift 2 ;;
    --build-dir=*) BUILD_DIR="$(cd "${1#*=}" && pwd)"; shift ;;
    --write-results) WRITE_RESULTS=1; shift ;;
    --duration) DURATION="$2"; shift 2 ;;
    --rate) RATE="$2"; shift 2 ;;
    --no-stream) STREAM=0; shift ;;
    --no-micro) MICRO=0; shift ;;
    --keep-tmp) KEEP_TMP=1; shift ;;
    --portkey) PORTKEY="$(realpath "$2")"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

TOLLGATE="$BUILD_DIR/tollgate"
MOCK="$BUILD_DIR/tollgate-mock"
for bin in "$TOLLGATE" "$MOCK"; do
  [[ -x "$bin" ]] || { echo "run.sh: $bin not found; build it (ninja -C $BUILD_DIR tollgate tollgate-mock) or pass --build-dir" >&2; exit 2; }
done
for tool in wrk nginx node curl; do
  command -v "$tool" >/dev/null || { echo "run.sh: '$tool' not found (apt-get install -y wrk nginx nodejs curl)" >&2; exit 2; }
done
NGINX="$(command -v nginx)"
NPROC="$(nproc)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/tollgate-bench.XXXXXX")"
chmod 755 "$TMP"               # nginx workers may run as another user
RES="$TMP/results"
mkdir -p "$RES"
PIDS=()

CHILD=""
# Runs a command in the background and waits for it, so that a signal to this script is handled
# at once (bash defers traps until a foreground child ends) and the child is stopped by cleanup.
run() {
  "$@" &
  CHILD=$!
  local rc=0
  wait "$CHILD" || rc=$?
  CHILD=""
  return "$rc"
}

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [[ -n $CHILD ]] && kill -TERM "$CHILD" 2>/dev/null || true
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 30); do
    local alive=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive == 0 ]] && break
    sleep 0.1
  done
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ $KEEP_TMP == 1 || $rc != 0 ]]; then
    log "work files kept in $TMP"
  else
    rm -rf "$TMP"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Waits until FILE contains "listening on http://HOST:PORT"; prints PORT.
wait_listening() {
  local file="$1" pid="$2" name="$3"
  for _ in $(seq 1 200); do
    if grep -q 'listening on http://' "$file" 2>/dev/null; then
      grep -m1 -o 'listening on http://[^ ]*' "$file" | sed 's/.*://'
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { echo "run.sh: $name exited during start-up:" >&2; cat "$TMP/$name.err" >&2 || true; return 1; }
    sleep 0.05
  done
  echo "run.sh: $name did not report listening within 10 s" >&2
  return 1
}

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

rss_kb() { awk -v k="$2:" '$1==k {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# Sum of a /proc status field over a process and its children (nginx: master + workers).
rss_tree_kb() {
  local pid="$1" field="$2" total=0 p
  for p in "$pid" $(pgrep -P "$pid" || true); do
    total=$(( total + $(rss_kb "$p" "$field") ))
  done
  echo "$total"
}

# utime + stime in clock ticks of a process and its children (nginx workers), from /proc/PID/stat.
cpu_ticks_tree() {
  local pid="$1" total=0 p t
  for p in "$pid" $(pgrep -P "$pid" || true); do
    t="$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}')"
    total=$(( total + ${t:-0} ))
  done
  echo "$total"
}
CLK_TCK="$(getconf CLK_TCK)"

# ---------------------------------------------------------------- start the three processes
LOADAVG_START="$(cut -d' ' -f1-3 /proc/loadavg)"
log "temp dir $TMP; build dir $BUILD_DIR"

"$MOCK" --host 127.0.0.1 --port 0 --threads "$MOCK_THREADS" --latency-ms 0 >"$TMP/mock.out" 2>"$TMP/mock.err" &
MOCK_PID=$!; PIDS+=("$MOCK_PID")
MOCK_PORT="$(wait_listening "$TMP/mock.out" "$MOCK_PID" mock)"
log "tollgate-mock pid $MOCK_PID on port $MOCK_PORT ($MOCK_THREADS threads)"

mkdir -p "$TMP/tollgate-data"
cat >"$TMP/tollgate.yaml" <<EOF
# Tollgate load benchmark config (written by bench/run.sh).
model_list:
  - model_name: bench-model
    litellm_params:
      model: openai/bench-model
      api_base: http://127.0.0.1:$MOCK_PORT/v1
      api_key: sk-bench-upstream
      # Priced, so that a budgeted key's request is admitted against its budget (an unpriced
      # model is refused where a budget attaches). The master key has no budget scope.
      input_cost_per_token: 0.000001
      output_cost_per_token: 0.000002
general_settings:
  master_key: $MASTER_KEY
tollgate_settings:
  data_dir: $TMP/tollgate-data
  worker_threads: $NPROC
EOF
"$TOLLGATE" serve --config "$TMP/tollgate.yaml" --host 127.0.0.1 --port 0 >"$TMP/tollgate.out" 2>"$TMP/tollgate.err" &
TG_PID=$!; PIDS+=("$TG_PID")
TG_PORT="$(wait_listening "$TMP/tollgate.out" "$TG_PID" tollgate)"
sleep 0.5
TG_IDLE_RSS_KB="$(rss_kb "$TG_PID" VmRSS)"
log "tollgate pid $TG_PID on port $TG_PORT, idle VmRSS ${TG_IDLE_RSS_KB} kB"

# The "tollgate+telemetry" target (issue 10): a second Tollgate with everything observable on,
# span export over OTLP/HTTP to a local sink and the access log to a file (metrics are always on),
# called with the master key like "tollgate".
node "$BENCH/otlp_sink.mjs" >"$TMP/otlp-sink.out" 2>"$TMP/otlp-sink.err" &
SINK_PID=$!; PIDS+=("$SINK_PID")
SINK_PORT="$(wait_listening "$TMP/otlp-sink.out" "$SINK_PID" otlp-sink)"
mkdir -p "$TMP/telemetry-data"
sed -e "s|data_dir: $TMP/tollgate-data|data_dir: $TMP/telemetry-data|" "$TMP/tollgate.yaml" >"$TMP/telemetry.yaml"
printf '  access_log: %s\n  otel:\n    enabled: true\n    traces_endpoint: http://127.0.0.1:%s/v1/traces\n' \
  "$TMP/access.jsonl" "$SINK_PORT" >>"$TMP/telemetry.yaml"
"$TOLLGATE" serve --config "$TMP/telemetry.yaml" --host 127.0.0.1 --port 0 >"$TMP/telemetry.out" 2>"$TMP/telemetry.err" &
TT_PID=$!; PIDS+=("$TT_PID")
TT_PORT="$(wait_listening "$TMP/telemetry.out" "$TT_PID" telemetry)"
log "tollgate+telemetry pid $TT_PID on port $TT_PORT (OTLP sink on $SINK_PORT, access log $TMP/access.jsonl)"

# Two more with span export to a collector that is down (nothing listens on its port) and to
# one that hangs (reads each export and never answers): fixed-rate rounds only, to show that a
# broken collector slows no request, and their dropped-span counters.
node "$BENCH/otlp_sink.mjs" --hang >"$TMP/otlp-hung.out" 2>"$TMP/otlp-hung.err" &
HUNG_PID=$!; PIDS+=("$HUNG_PID")
HUNG_PORT="$(wait_listening "$TMP/otlp-hung.out" "$HUNG_PID" otlp-hung)"
DOWN_PORT="$(free_port)"
for t in hung:$HUNG_PORT down:$DOWN_PORT; do
  IFS=: read -r kind port <<<"$t"
  mkdir -p "$TMP/otel-$kind-data"
  sed -e "s|data_dir: $TMP/tollgate-data|data_dir: $TMP/otel-$kind-data|" "$TMP/tollgate.yaml" >"$TMP/otel-$kind.yaml"
  printf '  otel:\n    enabled: true\n    timeout_ms: 1000\n    traces_endpoint: http://127.0.0.1:%s/v1/traces\n' "$port" >>"$TMP/otel-$kind.yaml"
  "$TOLLGATE" serve --config "$TMP/otel-$kind.yaml" --host 127.0.0.1 --port 0 >"$TMP/otel-$kind.out" 2>"$TMP/otel-$kind.err" &
  pid=$!; PIDS+=("$pid")
  port="$(wait_listening "$TMP/otel-$kind.out" "$pid" "otel-$kind")"
  if [[ $kind == hung ]]; then OH_PID=$pid; OH_PORT=$port; else OD_PID=$pid; OD_PORT=$port; fi
done
log "tollgate+otel-hung pid $OH_PID on port $OH_PORT (collector $HUNG_PORT hangs); tollgate+otel-down pid $OD_PID on port $OD_PORT (collector $DOWN_PORT down)"

NGINX_PORT="$(free_port)"
mkdir -p "$TMP/nginx/tmp"
NGINX_USER=""
[[ $EUID == 0 ]] && NGINX_USER="user $(id -un) $(id -gn);"
cat >"$TMP/nginx/nginx.conf" <<EOF
# Plain nginx reverse proxy to tollgate-mock (written by bench/run.sh).
# worker_processes = nproc ($NPROC), the same as Tollgate's worker threads.
$NGINX_USER
worker_processes $NPROC;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;   # Tollgate writes no per-request log either
  client_body_temp_path $TMP/nginx/tmp/body;
  proxy_temp_path $TMP/nginx/tmp/proxy;
  fastcgi_temp_path $TMP/nginx/tmp/fastcgi;
  uwsgi_temp_path $TMP/nginx/tmp/uwsgi;
  scgi_temp_path $TMP/nginx/tmp/scgi;
  upstream mock {
    server 127.0.0.1:$MOCK_PORT;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location / {
      proxy_pass http://mock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
EOF
"$NGINX" -p "$TMP/nginx" -c "$TMP/nginx/nginx.conf" -e "$TMP/nginx/error.log" >"$TMP/nginx.out" 2>"$TMP/nginx.err" &
NGINX_PID=$!; PIDS+=("$NGINX_PID")
for i in $(seq 1 100); do
  curl -fsS -o /dev/null "http://127.0.0.1:$NGINX_PORT/health" 2>/dev/null && break
  kill -0 "$NGINX_PID" 2>/dev/null || { echo "run.sh: nginx exited:" >&2; cat "$TMP/nginx.err" "$TMP/nginx/error.log" >&2 2>/dev/null; exit 1; }
  [[ $i == 100 ]] && { echo "run.sh: nginx did not answer within 10 s" >&2; exit 1; }
  sleep 0.1
done
NGINX_IDLE_RSS_KB="$(rss_tree_kb "$NGINX_PID" VmRSS)"
log "nginx pid $NGINX_PID on port $NGINX_PORT ($NPROC workers)"

# The peer (--portkey): Portkey's open-source gateway on Node, routed to the same simulator by
# its headers. Its own logs and UI off where it has a switch (--headless).
PK_PID=""; PK_PORT=""; PK_IDLE_RSS_KB=0; PORTKEY_UPSTREAM="http://127.0.0.1:$MOCK_PORT/v1"
if [[ -n $PORTKEY ]]; then
  PK_PORT="$(free_port)"
  node "$PORTKEY" --port="$PK_PORT" --headless >"$TMP/portkey.out" 2>"$TMP/portkey.err" &
  PK_PID=$!; PIDS+=("$PK_PID")
  for i in $(seq 1 200); do
    code="$(curl -sS -o /dev/null -w '%{http_code}' -H 'content-type: application/json' -H 'authorization: Bearer sk-x' \
      -H 'x-portkey-provider: openai' -H "x-portkey-custom-host: $PORTKEY_UPSTREAM" \
      -d '{"model":"bench-model","messages":[{"role":"user","content":"hi"}],"max_tokens":16}' \
      "http://127.0.0.1:$PK_PORT/v1/chat/completions" 2>/dev/null || echo 000)"
    [[ $code == 200 ]] && break
    kill -0 "$PK_PID" 2>/dev/null || { echo "run.sh: portkey exited:" >&2; cat "$TMP/portkey.err" >&2; exit 1; }
    [[ $i == 200 ]] && { echo "run.sh: portkey did not answer 200 within 20 s (last $code)" >&2; exit 1; }
    sleep 0.1
  done
  sleep 0.5
  PK_IDLE_RSS_KB="$(rss_tree_kb "$PK_PID" VmRSS)"
  log "portkey pid $PK_PID on port $PK_PORT (upstream $PORTKEY_UPSTREAM), idle VmRSS ${PK_IDLE_RSS_KB} kB"
fi

# Smoke test: one request through each target must succeed.
BODY='{"model":"bench-model","messages":[{"role":"user","content":"hi"}],"max_tokens":16}'
for port in "$MOCK_PORT" "$NGINX_PORT" "$TG_PORT"; do
  code="$(curl -sS -o "$TMP/smoke.json" -w '%{http_code}' -H 'content-type: application/json' \
    -H "authorization: Bearer $MASTER_KEY" -d "$BODY" "http://127.0.0.1:$port/v1/chat/completions")"
  [[ $code == 200 ]] || { echo "run.sh: smoke request to port $port got HTTP $code:" >&2; cat "$TMP/smoke.json" >&2; exit 1; }
done

# Tollgate's group-commit figures (GET /tollgate/stats, master key) into FILE.
tg_stats() {
  curl -fsS -H "authorization: Bearer $MASTER_KEY" "http://127.0.0.1:$TG_PORT/tollgate/stats" >"$1" \
    || { echo "run.sh: GET /tollgate/stats failed" >&2; exit 1; }
}

# The "tollgate+budget" target: the same Tollgate process, called with a virtual key that has a
# budget, so every request reserves at the key scope, writes a durable (group-committed) reserve
# record before the upstream call and a settle record after it.
code="$(curl -sS -o "$TMP/key.json" -w '%{http_code}' -H 'content-type: application/json' \
  -H "authorization: Bearer $MASTER_KEY" -d '{"key_alias":"bench-budget","max_budget":1000000}' \
  "http://127.0.0.1:$TG_PORT/key/generate")"
[[ $code == 200 ]] || { echo "run.sh: POST /key/generate got HTTP $code:" >&2; cat "$TMP/key.json" >&2; exit 1; }
BUDGET_KEY="$(node -e 'console.log(require(process.argv[1]).key)' "$TMP/key.json")"
[[ $BUDGET_KEY == sk-* ]] || { echo "run.sh: no key in the /key/generate answer:" >&2; cat "$TMP/key.json" >&2; exit 1; }
tg_stats "$RES/tg-stats-before-budget-smoke.json"
code="$(curl -sS -o "$TMP/smoke.json" -w '%{http_code}' -H 'content-type: application/json' \
  -H "authorization: Bearer $BUDGET_KEY" -d "$BODY" "http://127.0.0.1:$TG_PORT/v1/chat/completions")"
[[ $code == 200 ]] || { echo "run.sh: smoke request with the budgeted key got HTTP $code:" >&2; cat "$TMP/smoke.json" >&2; exit 1; }
tg_stats "$RES/tg-stats-after-budget-smoke.json"
# The budgeted request must have written ledger records (reserve + settle); else the target
# would not measure what it claims to.
node -e 'const a=require(process.argv[1]).group_commit, b=require(process.argv[2]).group_commit;
  const d=b.ledger_records-a.ledger_records; console.log(d); process.exit(d>0?0:1)' \
  "$RES/tg-stats-before-budget-smoke.json" "$RES/tg-stats-after-budget-smoke.json" >"$RES/budget-smoke-ledger-records.txt" \
  || { echo "run.sh: the budgeted smoke request wrote no ledger record (see $RES/tg-stats-*.json)" >&2; exit 1; }
log "budgeted virtual key created; its smoke request wrote $(cat "$RES/budget-smoke-ledger-records.txt") ledger records"

mock_requests() {
  curl -fsS "http://127.0.0.1:$MOCK_PORT/mock/stats" | node -e \
    'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);console.log(j.requests_total??j.totals?.requests??-1)})' \
    2>/dev/null || echo -1
}

# ---------------------------------------------------------------- measure each target
export BENCH_MODEL="bench-model"

# The generator's own ceiling, closed loop against the simulator (compare with wrk's direct figure).
log "generator ceiling check (closed loop, $CONNS connections, 5 s, direct)"
run node "$BENCH/fixed_rate.mjs" --mode max --url "http://127.0.0.1:$MOCK_PORT/v1/chat/completions" \
  --connections "$CONNS" --duration 5 --warmup 1 --key "$MASTER_KEY" >"$RES/generator-max.json"

# Waits until one request through URL answers 200 again; records how long that took (seconds).
# Needed because Tollgate counts the requests that wrk abandons when it stops as deployment
# failures and cools the (only) deployment down for cooldown_time (5 s): see bench/README.md.
wait_ready() {
  local name="$1" url="$2" what="$3" key="$4" t0 t1 code=000
  local -a extra=()
  [[ $name == portkey ]] && extra=(-H "x-portkey-provider: openai" -H "x-portkey-custom-host: $PORTKEY_UPSTREAM")
  t0="$(date +%s.%N)"
  for _ in $(seq 1 100); do
    code="$(curl -sS -o /dev/null -w '%{http_code}' -H 'content-type: application/json' "${extra[@]}" \
      -H "authorization: Bearer $key" -d "$BODY" "$url" 2>/dev/null || echo 000)"
    [[ $code == 200 ]] && break
    sleep 0.2
  done
  t1="$(date +%s.%N)"
  local waited; waited="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')"
  echo "$what $waited $code" >>"$RES/$name-recovery.txt"
  if [[ $code != 200 ]]; then
    echo "run.sh: $name still answers HTTP $code 20 s after $what" >&2
    exit 1
  fi
  [[ $waited != 0.0 && $waited != 0.1 ]] && log "$name: answered 200 again only after ${waited}s ($what)"
  return 0
}

# Throughput phase for one target: warm-up, wrk at fixed concurrency, streaming wrk.
throughput_target() {
  local name="$1" port="$2" pid="$3" key="$4"
  local url="http://127.0.0.1:$port/v1/chat/completions"
  local before after
  : >"$RES/$name-recovery.txt"
  local hdrs=""
  [[ $name == portkey ]] && hdrs="x-portkey-provider: openai|x-portkey-custom-host: $PORTKEY_UPSTREAM"
  export BENCH_HEADERS="$hdrs"
  log "$name: warm-up ${WARMUP}s"
  BENCH_KEY="$key" run wrk -t"$WRK_THREADS" -c"$CONNS" -d"${WARMUP}s" -s "$BENCH/chat.lua" "$url" >"$RES/$name-warmup.txt"
  wait_ready "$name" "$url" after-warmup "$key"
  before="$(mock_requests)"
  local cpu0 cpu1; cpu0="$(cpu_ticks_tree "$pid")"
  log "$name: throughput, wrk -t$WRK_THREADS -c$CONNS -d${DURATION}s"
  BENCH_KEY="$key" run wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" --latency -s "$BENCH/chat.lua" "$url" >"$RES/$name-wrk.txt"
  cpu1="$(cpu_ticks_tree "$pid")"
  after="$(mock_requests)"
  echo "$(( after - before ))" >"$RES/$name-upstream-requests.txt"
  awk -v a="$cpu0" -v b="$cpu1" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f\n", (b - a) / hz}' >"$RES/$name-cpu-s.txt"
  log "$name: $(grep 'Requests/sec' "$RES/$name-wrk.txt" | tr -s ' ')$(grep -o 'Non-2xx.*' "$RES/$name-wrk.txt" | sed 's/^/, /')"
  wait_ready "$name" "$url" after-throughput "$key"
  if [[ $STREAM == 1 ]]; then
    log "$name: streaming throughput ${STREAM_DURATION}s"
    BENCH_KEY="$key" BENCH_STREAM=1 run wrk -t"$WRK_THREADS" -c"$CONNS" -d"${STREAM_DURATION}s" -s "$BENCH/chat.lua" "$url" >"$RES/$name-stream.txt"
    wait_ready "$name" "$url" after-streaming "$key"
  fi
  kill -0 "$pid" 2>/dev/null || { echo "run.sh: $name (pid $pid) died during its run" >&2; exit 1; }
}

# One fixed-rate round for one target.
latency_round() {
  local name="$1" port="$2" round="$3" key="$4"
  local url="http://127.0.0.1:$port/v1/chat/completions"
  local -a hargs=()
  [[ $name == portkey ]] && hargs=(--header "x-portkey-provider: openai" --header "x-portkey-custom-host: $PORTKEY_UPSTREAM")
  run node "$BENCH/fixed_rate.mjs" --url "$url" --rate "$RATE" --duration "$LAT_DURATION" --warmup 1 \
    --connections "$CONNS" --key "$key" "${hargs[@]}" --samples "$RES/$name-fixed-r$round.samples" >"$RES/$name-fixed-r$round.json"
  log "$name: round $round: $(node -e 'const j=require(process.argv[1]);console.log(`${j.achieved_rps} req/s, p50 ${j.latency_ms.p50} p90 ${j.latency_ms.p90} p99 ${j.latency_ms.p99} ms, non-2xx ${j.non2xx}, errors ${j.errors}`)' "$RES/$name-fixed-r$round.json")"
}

# Phase 1: throughput, one target after the other.
throughput_target direct "$MOCK_PORT" "$MOCK_PID" "$MASTER_KEY"
throughput_target nginx "$NGINX_PORT" "$NGINX_PID" "$MASTER_KEY"
throughput_target tollgate "$TG_PORT" "$TG_PID" "$MASTER_KEY"
tg_stats "$RES/tg-stats-before-budget-throughput.json"
throughput_target tollgate+budget "$TG_PORT" "$TG_PID" "$BUDGET_KEY"
tg_stats "$RES/tg-stats-after-throughput.json"
throughput_target tollgate+telemetry "$TT_PORT" "$TT_PID" "$MASTER_KEY"
[[ -n $PORTKEY ]] && throughput_target portkey "$PK_PORT" "$PK_PID" "$MASTER_KEY"

# Phase 2: latency at a fixed rate, interleaved rounds so that drift hits every target alike.
for round in $(seq 1 "$ROUNDS"); do
  log "fixed rate ${RATE} req/s, round $round of $ROUNDS (${LAT_DURATION}s per target)"
  latency_round direct "$MOCK_PORT" "$round" "$MASTER_KEY"
  latency_round nginx "$NGINX_PORT" "$round" "$MASTER_KEY"
  latency_round tollgate "$TG_PORT" "$round" "$MASTER_KEY"
  latency_round tollgate+budget "$TG_PORT" "$round" "$BUDGET_KEY"
  latency_round tollgate+telemetry "$TT_PORT" "$round" "$MASTER_KEY"
  latency_round tollgate+otel-hung "$OH_PORT" "$round" "$MASTER_KEY"
  latency_round tollgate+otel-down "$OD_PORT" "$round" "$MASTER_KEY"
  [[ -n $PORTKEY ]] && latency_round portkey "$PK_PORT" "$round" "$MASTER_KEY"
done
for t in otel-hung:$OH_PORT otel-down:$OD_PORT; do
  curl -fsS "http://127.0.0.1:${t#*:}/metrics" -H "authorization: Bearer $MASTER_KEY" 2>/dev/null \
    | grep '^tollgate_otel_spans_' >"$RES/tollgate+${t%%:*}-otel-metrics.txt" || true
done
# Phase 3 (issue 10): CPU per request with telemetry off and on, at one fixed offered rate below
# saturation, in interleaved rounds. CPU per request at saturation depends on the throughput
# reached (batching), and the OTLP sink competes for the same cores, so the throughput run's
# figure mixes the two; at a fixed rate both processes do the same work per second.
: >"$RES/telemetry-cpu.txt"
for round in $(seq 1 "$CPU_ROUNDS"); do
  for t in tollgate:$TG_PORT:$TG_PID tollgate+telemetry:$TT_PORT:$TT_PID; do
    IFS=: read -r name port pid <<<"$t"
    c0="$(cpu_ticks_tree "$pid")"
    run node "$BENCH/fixed_rate.mjs" --url "http://127.0.0.1:$port/v1/chat/completions" --rate "$CPU_RATE" \
      --duration "$CPU_DURATION" --warmup 0 --connections "$CONNS" --key "$MASTER_KEY" >"$RES/$name-cpu-r$round.json"
    c1="$(cpu_ticks_tree "$pid")"
    n="$(node -e 'const j=require(process.argv[1]);console.log(j.ok + j.non2xx)' "$RES/$name-cpu-r$round.json")"
    echo "$round $name $(( c1 - c0 )) $n" >>"$RES/telemetry-cpu.txt"
  done
  log "telemetry CPU round $round of $CPU_ROUNDS at $CPU_RATE req/s: $(tail -2 "$RES/telemetry-cpu.txt" | awk -v hz="$CLK_TCK" '{printf "%s %.1f µs/req  ", $2, $3 / hz * 1e6 / $4}')"
done
echo "$CLK_TCK" >"$RES/clk-tck.txt"
curl -fsS "http://127.0.0.1:$SINK_PORT/stats" >"$RES/otlp-sink.json" 2>/dev/null || true
wc -l <"$TMP/access.jsonl" >"$RES/access-lines.txt" 2>/dev/null || true
# Group-commit figures after all runs (p50/p99/max over the last 65,536 ledger records).
tg_stats "$RES/tg-stats-end.json"
curl -fsS -H "authorization: Bearer $MASTER_KEY" "http://127.0.0.1:$TG_PORT/key/info?key=$BUDGET_KEY" >"$RES/budget-key-info.json" 2>/dev/null || true

for t in direct:$MOCK_PID nginx:$NGINX_PID tollgate:$TG_PID ${PK_PID:+portkey:$PK_PID}; do
  name="${t%%:*}"; pid="${t##*:}"
  kill -0 "$pid" 2>/dev/null || { echo "run.sh: $name (pid $pid) died" >&2; exit 1; }
  rss_tree_kb "$pid" VmHWM >"$RES/$name-hwm-kb.txt"
  rss_tree_kb "$pid" VmRSS >"$RES/$name-rss-kb.txt"
done

# Ledger micro benchmark (bench/ledger_bench.cpp), after the load runs so that it does not
# disturb them; only if it is built (ninja -C BUILD_DIR tollgate_micro_bench). Not built here.
MICRO_BIN="$BUILD_DIR/bench/tollgate_micro_bench"
if [[ $MICRO == 1 && -x $MICRO_BIN ]]; then
  log "ledger micro benchmark ($MICRO_BIN, BM_ReserveSettle + BM_ScopeBuildOnly, 1M keys; ~10 s)"
  run "$MICRO_BIN" --benchmark_filter='^BM_(ReserveSettle|ScopeBuildOnly)(/|$)' \
    --benchmark_out="$RES/micro.json" --benchmark_out_format=json >"$RES/micro.txt" 2>"$RES/micro.err" \
    || { log "micro benchmark failed (see $RES/micro.err)"; rm -f "$RES/micro.json"; }
  date -u -r "$MICRO_BIN" '+%Y-%m-%d %H:%MZ' >"$RES/micro-built.txt"
elif [[ $MICRO == 1 ]]; then
  log "micro benchmark not built ($MICRO_BIN); build it with ninja -C $BUILD_DIR tollgate_micro_bench"
fi

# ---------------------------------------------------------------- report
cat >"$RES/meta.json" <<EOF
{
  "date": "$(date -u +%Y-%m-%d)",
  "time_utc": "$(date -u +%H:%M:%SZ)",
  "uname": "$(uname -srm)",
  "nproc": $NPROC,
  "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/"/\\"/g')",
  "mem_total": "$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)",
  "wrk": "$(wrk -v 2>&1 | head -1 | sed 's/ Copyright.*//; s/"/\\"/g')",
  "nginx": "$("$NGINX" -v 2>&1 | sed 's/.*: //')",
  "node": "$(node --version)",
  "tollgate_commit": "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- src tools 2>/dev/null || echo ' + uncommitted changes in src/ or tools/')",
  "tollgate_built": "$(date -u -r "$TOLLGATE" '+%Y-%m-%d %H:%MZ')",
  "build_type": "$(grep -m1 '^CMAKE_BUILD_TYPE' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null | cut -d= -f2)",
  "conns": $CONNS, "wrk_threads": $WRK_THREADS, "duration_s": $DURATION, "warmup_s": $WARMUP,
  "rate": $RATE, "rounds": $ROUNDS, "lat_duration_s": $LAT_DURATION, "stream": $STREAM, "stream_duration_s": $STREAM_DURATION,
  "cpu_rate": $CPU_RATE, "cpu_rounds": $CPU_ROUNDS, "cpu_duration_s": $CPU_DURATION,
  "mock_threads": $MOCK_THREADS, "tollgate_threads": $NPROC, "nginx_workers": $NPROC,
  "loadavg_start": "$LOADAVG_START", "loadavg_end": "$(cut -d' ' -f1-3 /proc/loadavg)",
  "tollgate_idle_rss_kb": $TG_IDLE_RSS_KB, "nginx_idle_rss_kb": $NGINX_IDLE_RSS_KB,
  "portkey": "$([[ -n $PORTKEY ]] && node -e 'console.log(require(process.argv[1]).version)' "$(dirname "$(dirname "$PORTKEY")")/package.json" 2>/dev/null)",
  "portkey_idle_rss_kb": $PK_IDLE_RSS_KB
}
EOF

REPORT_ARGS=("$RES")
[[ $WRITE_RESULTS == 1 ]] && REPORT_ARGS+=(--write-results "$BENCH/RESULTS.md")
node "$BENCH/report.mjs" "${REPORT_ARGS[@]}"
