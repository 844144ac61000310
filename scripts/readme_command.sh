#!/usr/bin/env bash
# Prints one of the README's commands, as written there, so that CI (.ci/run) runs exactly
# what a newcomer copies and the two can never drift apart.
#
#   bash scripts/readme_command.sh set-up|test
#
# The README marks each with an HTML comment, invisible on the rendered page, on the line
# before its ```sh block: `<!-- readme-command: set-up -->`. The command is the block's first
# line. A missing marker, or a marker not followed by a ```sh block with a first line, is an
# error (exit 2): CI then fails instead of running something else.
set -euo pipefail
name="${1:-}"
case "$name" in
  set-up | test) ;;
  *) echo "usage: bash scripts/readme_command.sh set-up|test" >&2; exit 2 ;;
esac
readme="$(dirname "$0")/../README.md"
command=$(awk -v marker="<!-- readme-command: $name -->" '
  state == 0 && $0 == marker { state = 1; next }
  state == 1 { if ($0 == "```sh") { state = 2; next } exit }
  state == 2 { if ($0 != "" && $0 !~ /^```/) print; exit }
' "$readme")
if [[ -z "$command" ]]; then
  echo "readme_command: README.md has no \`<!-- readme-command: $name -->\` line before a \`\`\`sh block with a command" >&2
  exit 2
fi
printf '%s\n' "$command"
