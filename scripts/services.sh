#!/usr/bin/env bash
# Throwaway servers for the tests: a PostgreSQL 15 cluster and a redis-server 7, each on a free
# port on 127.0.0.1, with their data under one directory in /tmp (nothing persists).
#
#   scripts/services.sh start   # starts both (if not already running), waits until they answer,
#                               # prints the export lines below
#   scripts/services.sh env     # prints the export lines of the running services
#   scripts/services.sh stop    # stops both and removes their directory
#
# Typical use: eval "$(scripts/services.sh start)"; ...; scripts/services.sh stop
#   export TOLLGATE_TEST_POSTGRES_URL=postgresql://tollgate:tollgate@127.0.0.1:PORT/postgres
#   export TOLLGATE_TEST_REDIS_URL=redis://127.0.0.1:PORT
# The role `tollgate` (password `tollgate`) may create databases; the tests make one per test.
# As root (CI), the servers run as Debian's unprivileged `postgres` / `redis` users (runuser);
# otherwise as the current user. Debian's own cluster on 5432, if any, is not used.
# One state directory per checkout (TOLLGATE_SERVICES_DIR overrides), so worktrees do not collide.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
REDIS_BIN="${REDIS_BIN:-$(command -v redis-server || echo /usr/bin/redis-server)}"
DIR="${TOLLGATE_SERVICES_DIR:-/tmp/tollgate-services.$(pwd | md5sum | cut -c1-10)}"

as_user() {  # as_user USER CMD... : run as USER when root, else as ourselves
  local user="$1"; shift
  if [ "$(id -u)" -eq 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi
}

free_port() {  # a port on 127.0.0.1 that nothing listens on (bash only: no python needed)
  # Below the kernel's ephemeral range: a port in it may be the local end of an outgoing
  # connection (or one in TIME_WAIT), which refuses a bind although nothing listens on it.
  local p low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "${low:-0}" -gt 12000 ] 2>/dev/null || low=32768
  for _ in $(seq 200); do
    p=$((10000 + RANDOM % (low - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "services.sh: no free port found" >&2; return 1
}

print_env() {
  [ -f "$DIR/env" ] || { echo "services.sh: no services running (start them first)" >&2; return 1; }
  cat "$DIR/env"
}

pg_running() { [ -f "$DIR/pg/data/postmaster.pid" ] && as_user postgres "$PG_BIN/pg_ctl" -D "$DIR/pg/data" status >/dev/null 2>&1; }
redis_running() { [ -f "$DIR/redis/redis.pid" ] && kill -0 "$(cat "$DIR/redis/redis.pid")" 2>/dev/null; }

start() {
  if [ -f "$DIR/env" ] && pg_running && redis_running; then print_env; return; fi
  stop >/dev/null 2>&1 || true
  mkdir -p "$DIR/pg" "$DIR/redis"
  chmod 755 "$DIR"
  [ "$(id -u)" -eq 0 ] && { chown postgres: "$DIR/pg"; chown redis: "$DIR/redis"; }

  local pg_port redis_port
  pg_port=$(free_port)
  redis_port=$(free_port)
  while [ "$redis_port" = "$pg_port" ]; do redis_port=$(free_port); done

  # PostgreSQL: trust on the cluster's own socket, passwords over TCP. No autovacuum: each test
  # drops its database WITH (FORCE) as the unprivileged tollgate role, which cannot terminate an
  # autovacuum worker (owned by the superuser) that happens to be in it.
  as_user postgres "$PG_BIN/initdb" -D "$DIR/pg/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C >"$DIR/pg/initdb.log" 2>&1 || { cat "$DIR/pg/initdb.log" >&2; exit 1; }
  as_user postgres "$PG_BIN/pg_ctl" -D "$DIR/pg/data" -l "$DIR/pg/server.log" -w -t 30 start \
    -o "-p $pg_port -c listen_addresses=127.0.0.1 -k $DIR/pg -c fsync=off -c full_page_writes=off -c max_connections=200 -c autovacuum=off" \
    >/dev/null || { cat "$DIR/pg/server.log" >&2; exit 1; }
  as_user postgres "$PG_BIN/psql" -h "$DIR/pg" -p "$pg_port" -U postgres -d postgres -v ON_ERROR_STOP=1 -q \
    -c "CREATE ROLE tollgate LOGIN CREATEDB PASSWORD 'tollgate'" >/dev/null

  # redis: no persistence.
  as_user redis "$REDIS_BIN" --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no --daemonize yes \
    --dir "$DIR/redis" --pidfile "$DIR/redis/redis.pid" --logfile "$DIR/redis/redis.log"

  local pg_url="postgresql://tollgate:tollgate@127.0.0.1:$pg_port/postgres"
  local ok=""
  for _ in $(seq 100); do
    if "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && redis-cli -h 127.0.0.1 -p "$redis_port" ping 2>/dev/null | grep -q PONG; then
      ok=1; break
    fi
    sleep 0.1
  done
  [ -n "$ok" ] || { echo "services.sh: the servers did not answer within 10 s" >&2; tail -5 "$DIR/pg/server.log" "$DIR/redis/redis.log" >&2; exit 1; }
  {
    echo "export TOLLGATE_TEST_POSTGRES_URL=$pg_url"
    echo "export TOLLGATE_TEST_REDIS_URL=redis://127.0.0.1:$redis_port"
  } >"$DIR/env"
  print_env
}

stop() {
  if [ -d "$DIR/pg/data" ]; then
    as_user postgres "$PG_BIN/pg_ctl" -D "$DIR/pg/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  if [ -f "$DIR/redis/redis.pid" ]; then
    local pid; pid=$(cat "$DIR/redis/redis.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$DIR"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) print_env ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
