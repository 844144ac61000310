#!/usr/bin/env bash
# Two builds of vitattn on the same work, in one run (a script, not a test):
#   bench/compare_builds.sh OLD_BUILD_DIR NEW_BUILD_DIR [--runs N]
# Each build dir holds `vitattn` and `vitattn_forward_bench` (a release build). Measures,
# alternating the two builds run by run (so a change in machine load hits both alike):
#   batch    vitattn -j 2 over 24 photo-like JPEGs of 0.3-1.9 MP (seeded model: decode,
#            attention, PNG)
#   forward  vitattn_forward_bench, a random ViT-S/16 at 224, 5 forwards per process, 2 threads
# and prints medians of wall time and of CPU time (user + sys of the child), and new/old
# ratios: below 1 is faster. First, bench/compare_outputs.py runs both builds on the sample set
# and compares every output byte for byte; a difference ends the run (exit 1) before timing.
# For a change that must leave outputs and speed as they were (a refactoring).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_BUILD_DIR NEW_BUILD_DIR [--runs N]" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2"); shift 2
runs=7
[ "${1:-}" = "--runs" ] && runs=$2
for b in "$old" "$new"; do
  for exe in vitattn vitattn_forward_bench; do
    [ -x "$b/$exe" ] || { echo "compare_builds: $b/$exe missing (cmake --build --preset release --target $exe)" >&2; exit 2; }
  done
done
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/compare_outputs.py" "$old" "$new"
/usr/bin/python3 "$here/make_vit.py" "$work" --models vit_s16 >/dev/null
exec /usr/bin/python3 "$here/compare_builds.py" "$work" "$old" "$new" "$runs"
