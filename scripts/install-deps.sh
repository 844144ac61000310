#!/usr/bin/env bash
# Installs every Debian 12 package vitattn needs to build, test and benchmark
# (clang and its compiler-rt for the libFuzzer targets, scripts/fuzz.sh). OpenBLAS is for numpy and
# torch (the oracles and the benchmark baselines); vitattn itself links no BLAS. slurm-wlm and munge
# run the single-node cluster of tests/slurm/run_slurm_test.sh. Chromium, its driver and selenium run
# the report pages' browser tests (tests/browser).
# libxxhash-dev: the hash of a model file in each output's settings record (src/files/content_hash.cpp).
# libwebp-dev: WebP decoded directly (libopencv-dev pulls it in too); libcpp-httplib-dev: the HTTP
# server of `vitattn serve` (header-only).
# libsentencepiece-dev: SigLIP's tokeniser (src/text/siglip_tokenizer.cpp); python3-sentencepiece and
# python3-protobuf: its oracle test trains a tiny model and encodes with it (tests/oracle/test_siglip_tokenizer.py).
# ccache: the build compiles through it when present (CMakeLists.txt, VITATTN_CCACHE).
# libutf8proc-dev: the Unicode letter/number/space classes and lower-casing of CLIP's tokeniser
# (src/text); python3-regex: its oracle's \p{L}/\p{N} (tests/oracle/test_clip_tokenizer.py).
# libdnnl-dev: oneDNN, the benchmarks' GEMM yardstick (bench/); vitattn itself does not link it.
# linux-perf: bench/run_forward_breakdown.py samples the forward with perf record (cpu-clock).
# python3-sklearn: average_precision_score, the segmentation mAP's yardstick in `vitattn eval`'s oracle
# (tests/oracle/test_eval.py); python3-scipy: its spearmanr for the sanity check.
# Run as root (or with sudo). Safe to run again: apt skips what is present.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends \
  build-essential cmake ninja-build pkg-config git ccache \
  libopencv-dev libjpeg62-turbo-dev libpng-dev libeigen3-dev libspdlog-dev libgtest-dev libcli11-dev nlohmann-json3-dev libdeflate-dev libcurl4-openssl-dev libwebp-dev libcpp-httplib-dev libxxhash-dev libsentencepiece-dev libutf8proc-dev \
  python3 python3-numpy python3-opencv python3-pil python3-torch python3-torchvision python3-pytest libopenblas0-pthread python3-sentencepiece python3-protobuf python3-regex python3-sklearn python3-scipy \
  hyperfine time libdnnl-dev linux-perf \
  slurm-wlm munge \
  chromium chromium-driver python3-selenium \
  clang libclang-rt-14-dev
