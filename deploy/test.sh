#!/usr/bin/env bash
# deploy/test.sh: installs what is missing, builds, and runs every test.
#
# Two builds:
#   build/asan  clang 14, Debug + AddressSanitizer + UndefinedBehaviorSanitizer:
#               the library and every unit/golden/integration test. clang
#               rather than g++ 12: in clean-clone CI runs on the 2-core
#               machine this tree built in 248 s instead of 547 s (wall time
#               from .ninja_log). g++ 12 still builds the Release binary of
#               deploy/run.sh and the image.
#   build/fuzz  clang, libFuzzer + ASan/UBSan: the fuzz targets, each run for a
#               short bounded smoke (env CK_FUZZ_SECONDS: CPU-s each, default
#               20), at the lowest priority beside the main suite.
# Every test runs through ctest; the last thing printed is ctest's summary of
# the main suite (repeated after the fuzz smokes' results).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

deploy/install-deps.sh

jobs=$(nproc)
# Tests run three per core: the integration tests mostly wait (on clients,
# ZooKeeper, session timeouts). Measured on the 2-core machine with the g++
# build: both cores ~30 % busy over the integration tests at one test per
# core, ~60 % at two, and the suite took 475 s instead of ~760 s; with the
# clang build, 488 s at two per core and 403 s at three (every test passing
# in both). Tests that need the machine to themselves are RUN_SERIAL.
# CK_TEST_JOBS overrides.
test_jobs=${CK_TEST_JOBS:-$(( jobs * 3 ))}
# Debug info: line tables only (-g1). Sanitizer reports keep their file:line
# stacks; the compiles and links are faster (about a tenth per heavy unit)
# and the objects about a third smaller. Set CK_DEBUG_FLAGS=-g for full
# debug info (variables for gdb).
debug_flags=${CK_DEBUG_FLAGS:--g1}
schema_dir=""
for d in "$root/../shared/kafka-protocol" "$root/shared/kafka-protocol"; do
  if [ -d "$d/messages" ]; then schema_dir=$(cd "$d" && pwd); break; fi
done
[ -n "$schema_dir" ] || echo "test.sh: Kafka schemas not found next to the repo; the generator check is skipped (not counted)"

start=$(date +%s)

cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG="$debug_flags" -DCMAKE_CXX_FLAGS_DEBUG="$debug_flags" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCK_FUZZ=ON -DBUILD_TESTING=ON \
  -DCK_FUZZ_SECONDS="${CK_FUZZ_SECONDS:-20}" >/dev/null
cmake --build build/fuzz -j"$jobs" --target fuzz_targets

# A build/asan configured with another compiler (g++, before 2026-12-06) is
# made again from scratch: CMake cannot switch the compiler of a build tree.
if [ -f build/asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' build/asan/CMakeCache.txt; then
  rm -rf build/asan
fi
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCK_SANITIZE=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_FLAGS_DEBUG="$debug_flags" -DCMAKE_CXX_FLAGS_DEBUG="$debug_flags" \
  -DCK_SCHEMA_DIR="$schema_dir" >/dev/null
cmake --build build/asan -j"$jobs"
echo "test.sh: builds took $(( $(date +%s) - start ))s so far"

# The fuzz smokes run beside the main suite at the lowest priority (nice 19),
# on the CPU the suite leaves idle while its tests wait on clients and
# ZooKeeper (about 65 of the 630 core-seconds of a 2-core run). Each is
# bounded by the CPU time it gets (tests/fuzz/smoke.py), not by the clock,
# so it does the same work however busy the machine is. Run before the
# suite, they took 31-43 s of CI's wall time.
rm -f build/fuzz/smokes.rc
(cd build/fuzz && rc=0 && { nice -n 19 ctest -j3 -L fuzz --output-on-failure > smokes.log 2>&1 || rc=$?; } &&
  echo "$rc" > smokes.rc) &
fuzz_pid=$!

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
suite_rc=0
(cd build/asan && ctest -j"$test_jobs" -LE fuzz --output-on-failure) 2>&1 | tee build/asan/suite.log || suite_rc=$?
fuzz_wait_start=$(date +%s)
wait "$fuzz_pid" || true
fuzz_rc=$(cat build/fuzz/smokes.rc 2>/dev/null || echo 1)
echo
echo "== fuzz smokes (waited $(( $(date +%s) - fuzz_wait_start ))s for them after the suite) =="
cat build/fuzz/smokes.log
echo "== main suite =="
sed -n '/tests passed, /,$p' build/asan/suite.log
if [ "$suite_rc" != 0 ] || [ "$fuzz_rc" != 0 ]; then
  echo "test.sh: FAILED (main suite exit $suite_rc, fuzz smokes exit $fuzz_rc)"
  exit 1
fi

# The compose drop-in test (podman) is opt-in: on a fresh machine its image
# builds alone exceed the time CI allows (see README, "Drop-in for Kafka in compose").
if [ "${CK_COMPOSE_TEST:-0}" = 1 ]; then
  deploy/compose-test.sh
fi
