#!/usr/bin/env bash
# Installs what is missing, builds the dev preset and runs the whole test suite.
# This is the README's test command; CI (.ci/run) runs it first, then the release build and
# scripts/hardening.sh. Each part is a timed step (scripts/steps.sh): a table of them closes
# the output, and the script fails when any step failed; a step whose build failed is
# reported as not run.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/steps.sh

step "deps install" bash scripts/install-deps.sh
step "dev configure" cmake --preset dev
step "dev build" --needs "dev configure" cmake --build --preset dev
# The tests are independent: each works in its own temporary folder.
step "dev tests" --needs "dev build" ctest --preset dev -j "$(nproc)"
steps_finish "test.sh"
