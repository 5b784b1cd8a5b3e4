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
#               short bounded smoke (env CK_FUZZ_SECONDS, default 30; the
#               three at once).
# Every test runs through ctest; the last thing printed is ctest's summary of
# the main suite.
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

# Fuzz build first, so the main suite's summary ends the output.
cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS_DEBUG="$debug_flags" -DCMAKE_CXX_FLAGS_DEBUG="$debug_flags" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCK_FUZZ=ON -DBUILD_TESTING=ON \
  -DCK_FUZZ_SECONDS="${CK_FUZZ_SECONDS:-30}" >/dev/null
cmake --build build/fuzz -j"$jobs" --target fuzz_targets
# The three smokes run at once, each for a fixed time: on 2 cores each gets
# 20 CPU-s in 30 s. Two at a time (20 s each) took 40 s for the same inputs,
# one core idle through the third.
(cd build/fuzz && ctest -j3 -L fuzz --output-on-failure)

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
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd build/asan
ctest -j"$test_jobs" -LE fuzz --output-on-failure

# The compose drop-in test (podman) is opt-in: on a fresh machine its image
# builds alone exceed the time CI allows (see README, "Drop-in for Kafka in compose").
if [ "${CK_COMPOSE_TEST:-0}" = 1 ]; then
  cd "$root" && deploy/compose-test.sh
fi
