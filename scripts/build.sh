#!/usr/bin/env bash
# Configures and builds Tollgate into ./build (Release with debug info, warnings as errors).
set -euo pipefail
cd "$(dirname "$0")/.."
"$(pwd)/scripts/install-deps.sh"
[ -f build/build.ninja ] || cmake -G Ninja -B build -S . -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOLLGATE_WERROR=ON "$@"
cmake --build build
