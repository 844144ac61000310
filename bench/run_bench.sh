#!/usr/bin/env bash
# vitattn speed benchmark (a script, not a test): bench/run_bench.sh [--rounds N] [-j N] [--dir D] [--keep]
# Binary from env VITATTN_BIN (default build/release/vitattn); fixtures from env VITATTN_SHARED
# (default <repo>/../shared). Uses Debian's /usr/bin/python3 (numpy + cv2); wall time, CPU time and
# peak RSS of each run come from wait4. Leaves OPENBLAS_* and other environment variables as they are.
set -euo pipefail
[ -x /usr/bin/python3 ] || { echo "run_bench: /usr/bin/python3 missing (apt-get install -y python3 python3-numpy python3-opencv)" >&2; exit 2; }
exec /usr/bin/python3 "$(dirname "$(readlink -f "$0")")/run_bench.py" "$@"
