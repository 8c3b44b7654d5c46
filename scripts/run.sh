#!/usr/bin/env bash
# The main job from a fresh machine: install dependencies, build what it needs (library, srt,
# Python binding; no tests, no benchmarks), and run the bundled default model through
# static_runtime, next to TorchScript.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Explicit OFF: build/ may have been configured by scripts/test.sh, which turns both ON.
bash scripts/build.sh -DSRT_BUILD_TESTS=OFF -DSRT_BUILD_BENCHMARKS=OFF
"${SRT_BUILD_DIR:-build}"/srt run "$@"
