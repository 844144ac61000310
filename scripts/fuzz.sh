#!/usr/bin/env bash
# Builds the fuzz preset (clang 14, libFuzzer, ASan + UBSan) and runs each fuzzer for a
# bounded time, then prints per fuzzer the executions and the final coverage.
#
#   bash scripts/fuzz.sh [--no-build] [seconds-per-fuzzer]      (default 45)
#
# --no-build: the fuzz preset is already built (scripts/hardening.sh builds it as its own timed
# step, so CI's table shows the build and the fuzzing apart).
# Each fuzzer starts from its committed seeds (fuzz/corpus/<name>/) and crash regressions
# (fuzz/regressions/<name>/); what it discovers goes to build/fuzz/work/<name>/, never into the
# source tree. A crash, leak, timeout (10 s per input) or out-of-memory (2 GB) fails the script;
# the input is saved under build/fuzz/artifacts/<name>/ and the log is in build/fuzz/<name>.log.
# To keep a crash as a regression: fix it, then copy the input to fuzz/regressions/<name>/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=1
if [[ "${1:-}" == --no-build ]]; then
  build=0
  shift
fi
secs="${1:-45}"
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/fuzz.sh [--no-build] [seconds-per-fuzzer]" >&2; exit 2; }

if ((build)); then
  cmake --preset fuzz
  cmake --build --preset fuzz -j 2
fi

# A sanitizer report ends the run with a failing status; OpenCV's own log lines are noise here.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export OPENCV_LOG_LEVEL=SILENT

failed=0
summary=()
for name in safetensors image npy npy_read pth png serve_request clip_text; do
  work="build/fuzz/work/$name"
  artifacts="build/fuzz/artifacts/$name"
  log="build/fuzz/$name.log"
  rm -rf "$work"
  mkdir -p "$work" "$artifacts"
  seeds=("fuzz/corpus/$name")
  [ -d "fuzz/regressions/$name" ] && seeds+=("fuzz/regressions/$name")
  echo "== ${name}_fuzzer for ${secs} s (log: $log)"
  start=$(date +%s)
  set +e
  "build/fuzz/${name}_fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$work" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  set -e
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  # libFuzzer's last status line, e.g. "#812345 DONE   cov: 812 ft: 2301 corp: 120/14Kb ..."
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$last")
  line=$(printf '%-12s %4s s  executions %-10s cov %-6s ft %-6s corpus %s' \
    "$name" "$elapsed" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}")
  if [ "$rc" -ne 0 ]; then
    failed=1
    line="$line  FAILED (exit $rc)"
    echo "-- ${name}_fuzzer failed; end of its log:"
    grep -v '^#[0-9]' "$log" | tail -40
    ls -1 "$artifacts" | sed 's/^/   artifact: /'
  fi
  echo "$line"
  summary+=("$line")
done

echo "== fuzz summary (${secs} s per fuzzer)"
printf '%s\n' "${summary[@]}"
exit "$failed"
