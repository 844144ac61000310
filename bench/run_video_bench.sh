#!/usr/bin/env bash
# Video benchmark (a script, not a test): bench/run_video_bench.sh [--rounds N] [--threads T] [--frames N] [--work DIR]
# Times vitattn on a clip (seeded head and a random ViT-S/16 at 224) against DINO's video_generation.py
# loop in PyTorch on the same model and frames, and against the codec-only floor (cv2 decode + encode).
# Binary from env VITATTN_BIN (default: build/release/vitattn, built if needed); photo from env
# VITATTN_SHARED (default <repo>/../shared). See bench/run_video_bench.py --help.
# Uses Debian's /usr/bin/python3 (numpy, cv2, torch on OpenBLAS: libopenblas0-pthread).
set -euo pipefail
[ -x /usr/bin/python3 ] || { echo "run_video_bench: /usr/bin/python3 missing (apt-get install -y python3 python3-numpy python3-opencv python3-torch libopenblas0-pthread)" >&2; exit 2; }
exec /usr/bin/python3 "$(dirname "$(readlink -f "$0")")/run_video_bench.py" "$@"
