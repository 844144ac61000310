#!/usr/bin/env bash
# The hardening checks CI runs after scripts/test.sh:
#   1. the asan preset (ASan + UBSan, gcc): build it and run the whole test suite;
#   2. the tsan preset (ThreadSanitizer, gcc): build the binary and run the parallel batch
#      tests (ctest --preset tsan: e2e_parallel_batch, 40 images with -j 4, and e2e_cli);
#   3. scripts/fuzz.sh: each libFuzzer target for a bounded time (clang).
#
#   bash scripts/hardening.sh [seconds-per-fuzzer]      (default 60)
#
# Every step fails the script (and CI) when it fails. Expects the packages of
# scripts/install-deps.sh (scripts/test.sh installs them first).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"

step() {
  local name="$1"
  shift
  local start=$SECONDS
  echo "==== hardening: $name"
  "$@"
  echo "==== hardening: $name passed in $((SECONDS - start)) s"
}

step "asan configure" cmake --preset asan
step "asan build" cmake --build --preset asan -j 2
step "asan tests" ctest --preset asan
step "tsan configure" cmake --preset tsan
step "tsan build" cmake --build --preset tsan -j 2
step "tsan parallel batch" ctest --preset tsan
step "fuzz (${secs} s per fuzzer)" bash scripts/fuzz.sh "$secs"
echo "==== hardening: all passed in $SECONDS s"
