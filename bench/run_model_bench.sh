#!/usr/bin/env bash
# ViT forward benchmark (a script, not a test): bench/run_model_bench.sh [--rounds N] [--repeat N] [--threads 1 2] ...
# Times vitattn's full ViT-S/16 and ViT-B/16 forward at 224 px against PyTorch and against the
# GEMM floor (the same products alone, numpy on OpenBLAS). See bench/run_model_bench.py --help.
# Uses Debian's /usr/bin/python3 (numpy, torch, torchvision) and /usr/bin/time for peak RSS.
set -euo pipefail
[ -x /usr/bin/python3 ] || { echo "run_model_bench: /usr/bin/python3 missing (apt-get install -y python3 python3-numpy python3-torch python3-torchvision)" >&2; exit 2; }
exec /usr/bin/python3 "$(dirname "$(readlink -f "$0")")/run_model_bench.py" "$@"
