#!/usr/bin/env bash
# Chaos soak (issue 14, item 6): bench/soak.mjs against build/tollgate and build/tollgate-mock.
#
#   bench/soak.sh [--minutes N] [--tmpfs-size 256m] [--build-dir DIR] [--json FILE] [--write-results] [--keep] [-- driver options]
#
# N minutes (default 30) of mixed traffic against the simulator injecting every fault of its
# catalogue; the gateway SIGKILLed and restarted every 2 minutes (none in the last 6); the store's
# tmpfs filled once for 20 s; the gateway's wall clock stepped +1 h once (libfaketime). Then the
# checks (money, caps, RSS/fd, crashes, the chaos itself), one line each with its figures, and
# `N passed, N failed`; exit status 0 only when every check passed. --write-results appends the
# report to bench/RESULTS.md. Needs root (the tmpfs mount);
# installs the Debian packages faketime, libfaketime and sqlite3 when they are missing.
# The store's tmpfs is mounted here and unmounted on exit, even on failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
MINUTES=30
# The store grows ~3 KB per request (ledger, scopes, spend-log row): a 30-minute run needs more
# than the 64 MB that the short run gets by.
TMPFS_SIZE=""
ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) MINUTES="$2"; shift 2 ;;
    --minutes=*) MINUTES="${1#*=}"; shift ;;
    --tmpfs-size) TMPFS_SIZE="$2"; shift 2 ;;
    --build-dir) BUILD_DIR="$(cd "$2" && pwd)"; shift 2 ;;
    --json) ARGS+=(--json "$2"); shift 2 ;;
    --keep) ARGS+=(--keep); shift ;;
    --write-results) ARGS+=(--write-results); shift ;;
    --) shift; ARGS+=("$@"); break ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "soak.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z "$TMPFS_SIZE" ]]; then
  TMPFS_SIZE=$(awk -v m="$MINUTES" 'BEGIN { print (m <= 5 ? "64m" : "256m") }')
fi

for bin in tollgate tollgate-mock; do
  [[ -x "$BUILD_DIR/$bin" ]] || { echo "soak.sh: $BUILD_DIR/$bin not found; build it (ninja -C $BUILD_DIR tollgate tollgate-mock) or pass --build-dir" >&2; exit 2; }
done
if [[ "$(id -u)" -ne 0 ]]; then
  echo "soak.sh: must run as root: the store's disk is a tmpfs mounted for the run (mount -t tmpfs)" >&2
  exit 2
fi
missing=()
for p in faketime libfaketime sqlite3; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "soak.sh: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
command -v node >/dev/null || { echo "soak.sh: node (>= 20) is required" >&2; exit 2; }
if [[ ! -d "$ROOT/tests/e2e/node_modules/openai" ]]; then
  (cd "$ROOT/tests/e2e" && npm ci --no-audit --no-fund)
fi

STORE="$(mktemp -d /tmp/tollgate-soak-store.XXXXXX)"
cleanup() {
  if mountpoint -q "$STORE"; then umount "$STORE" || umount -l "$STORE"; fi
  rmdir "$STORE" 2>/dev/null || true
}
trap cleanup EXIT
if ! mount -t tmpfs -o "size=$TMPFS_SIZE" tmpfs "$STORE"; then
  echo "soak.sh: cannot mount a tmpfs on $STORE: the disk-fill part of the soak needs one (root, and a kernel/container that allows mount)" >&2
  exit 2
fi

export TOLLGATE_BIN="$BUILD_DIR/tollgate" TOLLGATE_MOCK_BIN="$BUILD_DIR/tollgate-mock"
cd "$ROOT"
set +e
node bench/soak.mjs --minutes "$MINUTES" --tmpfs-dir "$STORE" --tmpfs-size "$TMPFS_SIZE" "${ARGS[@]}"
rc=$?
set -e
exit $rc
