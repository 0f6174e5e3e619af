#!/usr/bin/env bash
# Starts a Tollgate cluster on this machine, from Debian's packages (docs/scale_out.md):
#   PostgreSQL 15 and Redis 7 (throwaway servers from scripts/services.sh, as their packages'
#   unprivileged users), the bundled upstream simulator on 127.0.0.1:4010, three gateways on
#   127.0.0.1:4001..4003 sharing that database and that Redis, and nginx on 127.0.0.1:4000 in
#   front (PORT=... to change). Master key sk-tollgate-dev. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
PORT="${PORT:-4000}"
N="${INSTANCES:-3}"
eval "$(./scripts/services.sh start)"
state=$(mktemp -d /tmp/tollgate-cluster.XXXXXX)
chmod 755 "$state"
pids=()
cleanup() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
  wait 2>/dev/null || true
  ./scripts/services.sh stop >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_line() {  # wait_line FILE PID WHAT: until FILE has "listening on"
  for _ in $(seq 150); do
    grep -q 'listening on' "$1" && return
    kill -0 "$2" 2>/dev/null || { echo "run-cluster.sh: $3 could not start:" >&2; cat "$1" >&2; exit 1; }
    sleep 0.1
  done
  echo "run-cluster.sh: $3 did not start in 15 s" >&2; exit 1
}

db="tollgate_cluster_$$"
psql "$TOLLGATE_TEST_POSTGRES_URL" -qAtc "CREATE DATABASE $db" >/dev/null
database_url="${TOLLGATE_TEST_POSTGRES_URL%/*}/$db"
# The simulator config, with the shared database and Redis added.
sed -e "s|^general_settings:|general_settings:\n  database_url: \"$database_url\"|" \
    -e "s|^router_settings:|router_settings:\n  redis_url: \"$TOLLGATE_TEST_REDIS_URL\"|" \
    examples/simulator.yaml >"$state/config.yaml"

./build/tollgate-mock --host 127.0.0.1 --port 4010 >"$state/mock.log" 2>&1 &
pids+=($!); wait_line "$state/mock.log" "$!" "the simulator"
servers=""
for i in $(seq "$N"); do
  port=$((PORT + i))
  ./build/tollgate serve --config "$state/config.yaml" --host 127.0.0.1 --port "$port" >"$state/gw$i.log" 2>&1 &
  pids+=($!); wait_line "$state/gw$i.log" "$!" "gateway $i"
  servers="$servers    server 127.0.0.1:$port max_fails=0;\n"
done
user_line=""; [ "$(id -u)" -eq 0 ] && user_line="user www-data;"
mkdir -p "$state/nginx"; chmod 777 "$state/nginx"
printf "%s\nworker_processes 2;\ndaemon off;\npid %s/nginx.pid;\nerror_log %s/nginx/error.log warn;\nevents { worker_connections 4096; }\nhttp {\n  access_log off;\n  client_body_temp_path %s/nginx/body;\n  proxy_temp_path %s/nginx/proxy;\n  fastcgi_temp_path %s/nginx/f; uwsgi_temp_path %s/nginx/u; scgi_temp_path %s/nginx/s;\n  client_max_body_size 16m;\n  upstream tollgate {\n%b    keepalive 64;\n  }\n  server {\n    listen 127.0.0.1:%s;\n    location / {\n      proxy_pass http://tollgate;\n      proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n      proxy_buffering off;\n      proxy_read_timeout 600s;\n      proxy_next_upstream error timeout;\n    }\n  }\n}\n" \
  "$user_line" "$state" "$state" "$state" "$state" "$state" "$state" "$state" "$servers" "$PORT" >"$state/nginx.conf"
nginx -c "$state/nginx.conf" -p "$state" &
pids+=($!)
sleep 0.5
echo "cluster: nginx on 127.0.0.1:$PORT -> $N gateways on 127.0.0.1:$((PORT + 1))..$((PORT + N))"
echo "  database $database_url, redis $TOLLGATE_TEST_REDIS_URL, simulator 127.0.0.1:4010; master key sk-tollgate-dev"
echo "  logs in $state; Ctrl-C stops everything"
wait "${pids[-1]}"
