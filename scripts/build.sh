#!/usr/bin/env bash
# Configures and builds static_runtime into build/ (or $SRT_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${SRT_BUILD_DIR:-build}
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# Reuse the generator an existing build directory was configured with.
if [ -f "$build_dir/CMakeCache.txt" ]; then generator=(); fi
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" --parallel "${SRT_JOBS:-2}"
