#!/usr/bin/env bash
# PNG encoding benchmark (a script, not a test): bench/run_png_bench.sh [--repeat N] [--sweep]
# vitattn's encoder against OpenCV's imencode on the benchmark's overlays; see run_png_bench.py.
set -euo pipefail
[ -x /usr/bin/python3 ] || { echo "run_png_bench: /usr/bin/python3 missing (apt-get install -y python3 python3-numpy python3-opencv)" >&2; exit 2; }
exec /usr/bin/python3 "$(dirname "$(readlink -f "$0")")/run_png_bench.py" "$@"
