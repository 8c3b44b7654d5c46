#!/usr/bin/env bash
# The main job from a fresh machine: install dependencies, build, and run the bundled default
# model through static_runtime, next to TorchScript.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
build/srt run "$@"
