#!/usr/bin/env bash
# Runs bench/streams_memory.mjs with enough descriptors for 10,000 concurrent streams (the
# gateway needs two per stream: the client's and the upstream's). Arguments are passed on.
set -euo pipefail
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
exec node "$(dirname "$0")/streams_memory.mjs" "$@"
