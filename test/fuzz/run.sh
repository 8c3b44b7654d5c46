#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang against a main build and runs each on its committed
# corpus (every committed input is replayed first, then libFuzzer mutates for the time given).
#
#   test/fuzz/run.sh                      the suite's short run: 30 s per harness, -seed=1
#   test/fuzz/run.sh --minutes 10         the long run
#
# Options: --seconds N | --minutes N     time per harness (default 30 s)
#          --build-dir DIR               the main build (default $SRT_BUILD_DIR, else build)
#          --instrument-library          compile static_runtime itself with coverage + ASan/UBSan
#                                        (a separate, slow build: see test/fuzz/README.md)
#          --only inputs|model_files     one harness
#          --seed N                      libFuzzer's -seed (default 1)
# Exits non-zero on any crash, sanitizer report, timeout or finding; libFuzzer saves the input as
# <fuzz build>/work/<harness>/crash-* (or timeout-*, oom-*) and prints how to reproduce it.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)

seconds=30
build_dir=${SRT_BUILD_DIR:-build}
instrument=OFF
seed=1
harnesses=(inputs model_files)
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --minutes) seconds=$(($2 * 60)); shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --instrument-library) instrument=ON; shift ;;
    --only) harnesses=("$2"); shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds N | --minutes N] [--build-dir DIR] [--instrument-library] [--only inputs|model_files] [--seed N]" >&2
       exit 2 ;;
  esac
done
case "$build_dir" in /*) ;; *) build_dir=$src/$build_dir ;; esac
if [ ! -f "$build_dir/zoo/manifest.txt" ] || ! ls "$build_dir"/libstatic_runtime.so >/dev/null 2>&1; then
  echo "fuzz: $build_dir is not a built main build (needs libstatic_runtime.so and zoo/): run scripts/build.sh" >&2
  exit 1
fi

# clang with libFuzzer's runtime (Debian: clang, libclang-rt-14-dev).
clang=$(command -v clang++ || command -v clang++-14 || true)
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
if [ -z "$clang" ] || ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    "$clang" -fsanitize=fuzzer,address -x c++ - -o "$probe/probe" 2>"$probe/log"; then
  echo "fuzz: FAIL: no clang++ with libFuzzer (-fsanitize=fuzzer) found; run scripts/setup.sh," \
       "which installs Debian's clang and libclang-rt-14-dev" >&2
  cat "$probe/log" >&2 2>/dev/null || true
  exit 1
fi

fuzz_dir=$build_dir/fuzz
[ "$instrument" = ON ] && fuzz_dir=$build_dir/fuzz-instrumented
generator=()
if command -v ninja >/dev/null 2>&1 && [ ! -f "$fuzz_dir/CMakeCache.txt" ]; then generator=(-G Ninja); fi
cmake -S "$src/test/fuzz" -B "$fuzz_dir" "${generator[@]}" -DCMAKE_CXX_COMPILER="$clang" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSRT_BUILD_DIR="$build_dir" \
  -DSRT_FUZZ_INSTRUMENT_LIBRARY=$instrument >"$fuzz_dir.configure.log" 2>&1 ||
  { cat "$fuzz_dir.configure.log" >&2; exit 1; }
cmake --build "$fuzz_dir" --parallel "${SRT_JOBS:-2}" --target fuzz_inputs fuzz_model_files

export SRT_FUZZ_ZOO_DIR=$build_dir/zoo
# An allocation too large for the machine (a huge shape's scratch or output) must come back as
# c10's out-of-memory error, which the harness accepts: ASan returns null above 3 GiB instead of
# aborting, below libFuzzer's own 4 GiB malloc limit.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=3072"
failed=()
for harness in "${harnesses[@]}"; do
  work=$fuzz_dir/work/$harness
  # New corpus entries go to a scratch directory; the committed corpus is only read.
  rm -rf "$work/new"
  mkdir -p "$work/new"
  echo "fuzz: $harness for ${seconds} s (-seed=$seed) on test/fuzz/corpus/$harness, log $work/fuzz.log"
  status=0
  "$fuzz_dir/fuzz_$harness" -seed="$seed" -max_total_time="$seconds" -timeout=60 \
    -rss_limit_mb=4096 -malloc_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/" \
    "$work/new" "$src/test/fuzz/corpus/$harness" >"$work/fuzz.log" 2>&1 || status=$?
  grep -E '^#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|^fuzz_[a-z_]+: [0-9]+ cases' "$work/fuzz.log" || true
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $harness FAILED (exit $status); the end of its log:" >&2
    tail -n 120 "$work/fuzz.log" >&2
    failed+=("$harness")
  fi
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${harnesses[*]}: no crash"
