#!/usr/bin/env bash
# The backward pass's cost against the forward, vitattn beside PyTorch autograd (a script, not a test):
#   bench/run_backward_bench.sh [--rounds N] [--repeat N] [--threads 1 2] [--models vit_s16 vit_b16]
# See bench/run_backward_bench.py --help. Uses Debian's /usr/bin/python3 (numpy, torch, torchvision).
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$(readlink -f "$0")")/run_backward_bench.py" "$@"
