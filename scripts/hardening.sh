#!/usr/bin/env bash
# The hardening checks CI runs after scripts/test.sh, each where its risk is:
#   1. the asan preset (ASan + UBSan, gcc): build what its tests need and run the tests
#      labelled sanitize (tests/CMakeLists.txt says why each test is in or out: the parsers,
#      the threads and the network, not what the dev suite already covered at low risk);
#   2. the tsan preset (ThreadSanitizer, gcc): build the binary and run the parallel batch
#      tests (ctest --preset tsan: e2e_parallel_batch, 40 images with -j 4, e2e_video's
#      decode/model/encode threads, and the others listed in CMakePresets.json);
#   3. the fuzz preset (clang, libFuzzer): build it, then scripts/fuzz.sh runs each target for
#      a bounded time.
#
#   bash scripts/hardening.sh [seconds-per-fuzzer]      (default 45)
#
# Every step runs even when an earlier one failed (a red asan run must not hide what tsan
# and the fuzzers would say); a step whose build failed is reported as not run. A table
# of the steps closes the output (scripts/steps.sh; under .ci/run, CI's one table), and the
# script fails (exit 1) when any step failed.
# Expects the packages of scripts/install-deps.sh (scripts/test.sh installs them first).
set -uo pipefail
cd "$(dirname "$0")/.."
secs="${1:-45}"
source scripts/steps.sh

step "asan configure" cmake --preset asan
step "asan build" --needs "asan configure" cmake --build --preset asan -j 2
step "asan tests" --needs "asan build" ctest --preset asan -j 2
step "tsan configure" cmake --preset tsan
step "tsan build" --needs "tsan configure" cmake --build --preset tsan -j 2
step "tsan tests" --needs "tsan build" ctest --preset tsan
step "fuzz configure" cmake --preset fuzz
step "fuzz build" --needs "fuzz configure" cmake --build --preset fuzz -j 2
step "fuzz run (${secs} s per target)" --needs "fuzz build" bash scripts/fuzz.sh --no-build "$secs"
steps_finish "hardening.sh"
