#!/usr/bin/env bash
# The whole test suite under a sanitizer, in a build directory of its own:
#   scripts/sanitize.sh address [ctest args]   AddressSanitizer + UBSan (+ LeakSanitizer), build-asan/
#   scripts/sanitize.sh thread  [ctest args]   ThreadSanitizer, build-tsan/
# Installs dependencies, configures and builds with -DSRT_SANITIZE=..., then runs ctest. Extra
# arguments go to ctest, e.g. `-R cpp_tests`; GTEST_FILTER='RuntimePool.*' narrows the C++ suite.
# Suppressions (cmake/sanitizers/*.supp) cover only LibTorch, libgomp, oneDNN, OpenBLAS and Python.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

usage() { echo "usage: scripts/sanitize.sh address|thread [ctest args]" >&2; exit 2; }
[ $# -ge 1 ] || usage
sanitizer=$1
shift
case "$sanitizer" in
  address) build_dir=${SRT_BUILD_DIR:-build-asan} runtime_lib=libasan ;;
  thread) build_dir=${SRT_BUILD_DIR:-build-tsan} runtime_lib=libtsan ;;
  *) usage ;;
esac
[ "$build_dir" != build ] || { echo "sanitize.sh: build/ is the normal build; use another" >&2; exit 2; }

bash scripts/setup.sh
SRT_BUILD_DIR=$build_dir bash scripts/build.sh -DSRT_SANITIZE="$sanitizer" -DSRT_BUILD_BENCHMARKS=OFF

supp=$root/cmake/sanitizers
# Stop at the first finding, with a full stack; the user's own options come last and win.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_init_order=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
# history_size=4: the stress test's races can be far apart; second_deadlock_stack for lock cycles.
export TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=1:history_size=4:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"

cd "$build_dir"
# The tests the caller selected, split by the "python" label: those run /usr/bin/python3.
mapfile -t selected < <(ctest -N "$@" 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: //p')
mapfile -t with_python < <(ctest -N -L '^python$' 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: //p')
native=()
python=()
for name in "${selected[@]}"; do
  if printf '%s\n' "${with_python[@]}" | grep -qx "$name"; then python+=("$name"); else native+=("$name"); fi
done

status=0
start=$SECONDS
if [ ${#native[@]} -gt 0 ]; then
  regex="^($(IFS='|'; echo "${native[*]}"))\$"
  ctest --output-on-failure --timeout 7200 "$@" -R "$regex" || status=1
fi

if [ ${#python[@]} -gt 0 ]; then
  # /usr/bin/python3 is not instrumented: the runtime the extension was linked with must be loaded
  # before anything else, or ASan refuses to start and TSan's interceptors lose to libc's; and
  # libstdc++ with it, or the runtime finds no __cxa_throw to intercept when it starts (Python
  # itself does not link libstdc++) and aborts at the first C++ exception.
  runtime=$(ldd libstatic_runtime.so | awk -v lib="$runtime_lib" 'index($1, lib) == 1 {print $3}')
  libstdcxx=$(ldd libstatic_runtime.so | awk 'index($1, "libstdc++") == 1 {print $3}')
  # Under ASan, leak checking is off for Python only: the interpreter, torch and numpy keep their
  # module-level allocations at exit by design, and their stacks (uninstrumented, no frame
  # pointers) cannot be told apart from ours. Leaks in our code are checked by the C++ suite.
  regex="^($(IFS='|'; echo "${python[*]}"))\$"
  # pytest captures file descriptor 2 around each test and a sanitizer that halts the process
  # takes its report with it: capture only Python's sys.stderr so the report reaches ctest.
  PYTEST_ADDOPTS="--capture=sys${PYTEST_ADDOPTS:+ $PYTEST_ADDOPTS}" \
  ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" LD_PRELOAD="$runtime $libstdcxx${LD_PRELOAD:+ $LD_PRELOAD}" \
    ctest --output-on-failure --timeout 7200 "$@" -R "$regex" || status=1
fi
echo "sanitize.sh: $sanitizer: $([ $status -eq 0 ] && echo clean || echo FAILED) in $((SECONDS - start)) s"
exit $status
