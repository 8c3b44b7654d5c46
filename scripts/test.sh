#!/usr/bin/env bash
# The whole test suite from a fresh machine: install dependencies, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Explicit ON: scripts/run.sh may have configured the same build directory with tests off.
bash scripts/build.sh -DSRT_BUILD_TESTS=ON -DSRT_BUILD_BENCHMARKS=ON
cd "${SRT_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 1800 "$@"
