#!/usr/bin/env bash
# Installs what is missing, builds the dev preset and runs the whole test suite.
# This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset dev
cmake --build --preset dev
ctest --preset dev -j "$(nproc)"  # the tests are independent: each works in its own temporary folder
