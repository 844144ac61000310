#!/usr/bin/env bash
# The hardening checks CI runs after scripts/test.sh:
#   1. the asan preset (ASan + UBSan, gcc): build it and run the whole test suite but the
#      Slurm cluster test (label slurm: it checks the scheduling, which scripts/test.sh ran,
#      and its 321-image batches would cost CI ten minutes under ASan) and the PyTorch
#      cross-checks (label torch_oracle: their time is torch's, and the binary paths they
#      drive run under ASan in other tests; see tests/CMakeLists.txt);
#   2. the tsan preset (ThreadSanitizer, gcc): build the binary and run the parallel batch
#      tests (ctest --preset tsan: e2e_parallel_batch, 40 images with -j 4, e2e_video's
#      decode/model/encode threads, and the others listed in CMakePresets.json);
#   3. scripts/fuzz.sh: each libFuzzer target for a bounded time (clang).
#
#   bash scripts/hardening.sh [seconds-per-fuzzer]      (default 60)
#
# Every step runs even when an earlier one failed (a red asan run must not hide what tsan
# and the fuzzers would say); a step whose build failed is reported as not run. A table
# of the steps closes the output, and the script fails (exit 1) when any step failed.
# Expects the packages of scripts/install-deps.sh (scripts/test.sh installs them first).
set -uo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"

names=() results=() times=()
failed=0

# step NAME [--needs EARLIER-NAME] CMD...: runs CMD unless EARLIER-NAME failed or was not run.
step() {
  local name="$1" needs=""
  shift
  if [[ "${1:-}" == --needs ]]; then
    needs="$2"
    shift 2
  fi
  local start=$SECONDS result
  if [[ -n "$needs" ]] && [[ "$(result_of "$needs")" != passed ]]; then
    result="not run ($needs did not pass)"
    failed=1
    echo "==== hardening: $name: $result"
  else
    echo "==== hardening: $name"
    if "$@"; then result=passed; else result="FAILED (exit $?)"; failed=1; fi
    echo "==== hardening: $name $result in $((SECONDS - start)) s"
  fi
  names+=("$name") results+=("$result") times+=("$((SECONDS - start))")
}

result_of() {
  local i
  for i in "${!names[@]}"; do
    [[ "${names[$i]}" == "$1" ]] && { echo "${results[$i]}"; return; }
  done
  echo "unknown"
}

step "asan configure" cmake --preset asan
step "asan build" --needs "asan configure" cmake --build --preset asan -j 2
step "asan tests" --needs "asan build" ctest --preset asan -j 2
step "tsan configure" cmake --preset tsan
step "tsan build" --needs "tsan configure" cmake --build --preset tsan -j 2
step "tsan parallel batch" --needs "tsan build" ctest --preset tsan
step "fuzz (${secs} s per fuzzer)" bash scripts/fuzz.sh "$secs"

echo
echo "==== hardening summary"
printf '  %-28s %-8s %s\n' step seconds result
for i in "${!names[@]}"; do
  printf '  %-28s %-8s %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"
done
if ((failed)); then
  echo "==== hardening: FAILED (see the table above) after $SECONDS s"
  exit 1
fi
echo "==== hardening: all passed in $SECONDS s"
