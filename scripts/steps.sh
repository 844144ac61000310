# Sourced by scripts/test.sh, scripts/hardening.sh and .ci/run: each runs its work as named,
# timed steps and closes with a table of them.
#
#   step NAME [--needs EARLIER-NAME] CMD...
#       runs CMD and records NAME, its seconds and its result (passed, FAILED (exit N), or
#       "not run" when EARLIER-NAME did not pass: a build that failed has nothing to test).
#       A failed step never stops the script: the steps after it still run, and
#       steps_finish fails at the end.
#   substeps NAME CMD...
#       runs a script that records its own steps (scripts/test.sh under .ci/run); when it
#       fails without a failed step of its own to show for it, NAME is recorded as failed.
#   steps_finish TITLE
#       prints the table and returns 1 when any step failed or was not run.
#
# ccache, when the build uses it (CMakeLists.txt, VITATTN_CCACHE): paths below the repository
# are hashed relative to it, so a second clone or worktree of the same sources hits the cache.
#
# Nested scripts share one table: when VITATTN_STEPS_LOG names a file (.ci/run sets it), each
# step is appended to it as a line "name<TAB>seconds<TAB>result", and only the script that
# created the file prints the table, so CI ends with one table of every step of every script.
# Without it, each script prints its own.

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"  # the scripts cd to the repository first

_steps_failed=0
if [[ -z "${VITATTN_STEPS_LOG:-}" ]]; then
  VITATTN_STEPS_LOG="$(mktemp "${TMPDIR:-/tmp}/vitattn-steps.XXXXXX")"
  _steps_owner=1
else
  _steps_owner=0
fi
export VITATTN_STEPS_LOG

# The result of the step NAME recorded last in the log (of this script or of an earlier one).
step_result() {
  awk -F'\t' -v n="$1" '$1 == n { r = $3 } END { print (r == "" ? "unknown" : r) }' "$VITATTN_STEPS_LOG"
}

step() {
  local name="$1" needs="" result
  shift
  if [[ "${1:-}" == --needs ]]; then
    needs="$2"
    shift 2
  fi
  local start=$SECONDS
  if [[ -n "$needs" ]] && [[ "$(step_result "$needs")" != passed ]]; then
    result="not run ($needs did not pass)"
    echo "==== step: $name: $result"
  else
    echo "==== step: $name"
    if "$@"; then result=passed; else result="FAILED (exit $?)"; fi
    echo "==== step: $name: $result in $((SECONDS - start)) s"
  fi
  [[ "$result" == passed ]] || _steps_failed=1
  printf '%s\t%s\t%s\n' "$name" "$((SECONDS - start))" "$result" >>"$VITATTN_STEPS_LOG"
}

substeps() {
  local name="$1" before rc=0 start=$SECONDS
  shift
  before=$(wc -l <"$VITATTN_STEPS_LOG")
  "$@" || rc=$?
  if ((rc != 0)); then
    _steps_failed=1
    if ! tail -n +"$((before + 1))" "$VITATTN_STEPS_LOG" | awk -F'\t' '$3 != "passed" { f = 1 } END { exit !f }'; then
      printf '%s\t%s\t%s\n' "$name" "$((SECONDS - start))" "FAILED (exit $rc) outside its steps" >>"$VITATTN_STEPS_LOG"
    fi
  fi
}

steps_finish() {
  local title="$1" any_failed
  any_failed=$(awk -F'\t' '$3 != "passed" { f = 1 } END { print f + 0 }' "$VITATTN_STEPS_LOG")
  if ((_steps_owner)); then
    echo
    echo "==== $title: steps"
    awk -F'\t' '{ printf "  %-34s %7s s  %s\n", $1, $2, $3; t += $2 }
                END { printf "  %-34s %7s s\n", "total", t }' "$VITATTN_STEPS_LOG"
    rm -f "$VITATTN_STEPS_LOG"
    if ((any_failed)); then
      echo "==== $title: FAILED (see the table above) after $SECONDS s"
    else
      echo "==== $title: all passed in $SECONDS s"
    fi
  fi
  if ((_steps_owner)); then
    ((any_failed == 0))
  else
    ((_steps_failed == 0))  # a nested script answers for its own steps; the owner for all
  fi
}
