#!/usr/bin/env bash
# Rewrites the generated reference block of docs/config.md from the schema table
# (`tollgate config schema`); tests/unit/config/schema_test.cpp fails until it is run after a
# change to src/config/settings_*.cpp. Usage: scripts/gen-config-docs.sh [path/to/tollgate]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/tollgate}"
doc=docs/config.md
tmp=$(mktemp)
"$bin" config schema > "$tmp.gen"
awk -v gen="$tmp.gen" '
  /^<!-- schema:begin / { print; while ((getline line < gen) > 0) print line; skip = 1; next }
  /^<!-- schema:end -->/ { skip = 0 }
  !skip { print }
' "$doc" > "$tmp"
grep -q '^<!-- schema:begin ' "$tmp" || { echo "no schema:begin marker in $doc" >&2; exit 1; }
mv "$tmp" "$doc"
rm -f "$tmp.gen"
echo "rewrote the reference block of $doc"
