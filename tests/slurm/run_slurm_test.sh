#!/usr/bin/env bash
# A real Slurm cluster on this machine (munged, slurmctld and slurmd on loopback, one node
# named localhost with the machine's CPUs and memory), running docs/slurm/vitattn-array.sbatch:
#   1. sbatch --array=1-4 over a folder of a few hundred generated images, with the bundled
#      model's --top and --report: no task writes a batch file (predictions.csv, index.html);
#      then the final step (the same script with VITATTN_SHARD=none, a job depending on the
#      array): every output exists exactly once and equals the one-machine run byte for byte,
#      the batch files included;
#   2. the same as --array=0-3 into a fresh folder, one task cancelled mid-run (scancel), then that task
#      run again (scontrol requeue; the script always passes --skip-existing), then the final
#      step: the set is complete and again equal to the one-machine run.
# Everything lives in a temporary folder; the daemons are stopped on exit, also on failure.
# Usage: run_slurm_test.sh VITATTN_BIN SOURCE_DIR
# Needs root (SlurmUser=root, as in CI) and Debian's slurm-wlm and munge
# (scripts/install-deps.sh). Without them it skips (exit 77), or fails under CI=true
# (the rule of tests/pylib/tally.py). Prints "slurm: N passed, M failed".
set -euo pipefail
BIN="$(realpath "$1")"
SRC="$(realpath "$2")"
PY=/usr/bin/python3
passed=0
failed=0

in_ci() { case "${CI:-}" in "" | 0 | false | no | FALSE | False | NO | No) return 1 ;; *) return 0 ;; esac; }
skip() {
  if in_ci; then
    echo "FAIL: would skip ($1), but CI=$CI: a skip under CI is a failure"
    exit 1
  fi
  echo "SKIP: $1"
  exit 77
}
check() {  # check "what" command…: counts a pass or a failure
  local what="$1"
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $what"; fi
}
die() {
  echo "FAIL: $*"
  echo "slurm: $passed passed, $((failed + 1)) failed"
  exit 1
}

for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol scancel; do
  command -v "$tool" >/dev/null || skip "$tool not found (apt-get install slurm-wlm munge: scripts/install-deps.sh)"
done
[ "$(id -u)" -eq 0 ] || skip "needs root: the cluster runs with SlurmUser=root, as CI does"

T="$(mktemp -d /tmp/vitattn-slurm.XXXXXX)"
chmod 700 "$T"
pids=()
stop_all() {
  local status=$?
  set +e
  if [ -f "$T/slurm.conf" ] && [ -n "${pids[*]}" ]; then
    SLURM_CONF="$T/slurm.conf" timeout 10 scancel --quiet --full --user=root 2>/dev/null
    for _ in $(seq 50); do  # the jobs end before their daemon does
      [ -z "$(SLURM_CONF="$T/slurm.conf" timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done  # slurmd, slurmctld, munged
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
    for log in "$T"/*.log "$T"/job/*.out; do [ -f "$log" ] && { echo "--- $log"; tail -n 20 "$log"; }; done
  fi
  rm -rf "$T"
  exit "$status"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# --- munge: a key of our own and a daemon on its own socket ------------------------------
mkdir -p "$T/munge"
chmod 700 "$T/munge"
mungekey --create --keyfile="$T/munge/munge.key" --force
chmod 600 "$T/munge/munge.key"
munged --foreground --force --key-file="$T/munge/munge.key" --socket="$T/munge/munge.socket" \
  --pid-file="$T/munge/munged.pid" --log-file="$T/munged.log" --seed-file="$T/munge/munged.seed" \
  >"$T/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$T/munge/munge.socket" ] && break; sleep 0.05; done
[ -S "$T/munge/munge.socket" ] || die "munged did not start"

# --- slurm.conf: one node, localhost, with what slurmd finds on this machine ------------
read -r CPUS MEM < <(slurmd -C | sed -n 's/.*CPUs=\([0-9]*\).*RealMemory=\([0-9]*\).*/\1 \2/p')
[ -n "${CPUS:-}" ] && [ -n "${MEM:-}" ] || die "slurmd -C did not give CPUs and RealMemory: $(slurmd -C)"
mkdir -p "$T/state" "$T/spool" "$T/job"
cat >"$T/slurm.conf" <<EOF
ClusterName=vitattn-ci
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.socket
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=ci Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$T/slurm.conf"
slurmctld -D -i -f "$SLURM_CONF" >"$T/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" >"$T/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 150); do
  state="$(sinfo -h -N -o %T 2>/dev/null || true)"
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || die "the node is not idle after 30 s (sinfo says: '$state')"
echo "cluster up after $SECONDS s: 1 node, $CPUS CPUs, $MEM MB"

# --- the images, and the one-machine run ----------------------------------------------
"$PY" - "$T/photos" <<'EOF'
import sys
from pathlib import Path
import cv2
import numpy as np
root = Path(sys.argv[1])
rng = np.random.default_rng(12)
base = cv2.GaussianBlur(rng.integers(0, 256, (360, 480, 3), dtype=np.uint8), (0, 0), 3)
for i in range(320):  # a few hundred, some in sub-folders, two stems shared
    sub = root / ("" if i % 4 else f"set{i % 3}")
    sub.mkdir(parents=True, exist_ok=True)
    img = np.roll(base, 5 * i, axis=1 if i % 2 else 0)
    cv2.imwrite(str(sub / f"img{i:03d}.{'jpg' if i % 5 else 'png'}"), img)
cv2.imwrite(str(root / "img001.png"), base)  # next to img001.jpg: both get renamed outputs
EOF
n_inputs=$(find "$T/photos" -type f | wc -l)
# The trained model has a classifier: each image's classes and page, and the batch files.
DRAW="--model $SRC/models/vit_cifar10_tintn.safetensors --top 2 --report"
start=$SECONDS
# shellcheck disable=SC2086  # DRAW is a list of options
"$BIN" "$T/photos" -r -o "$T/whole" -j 2 -q $DRAW >/dev/null || die "the one-machine run failed"
echo "one-machine run of $n_inputs images: $((SECONDS - start)) s"
n_outputs=$(find "$T/whole" -type f | wc -l)
# Per image: the overlay, its rows of predictions.csv, its page, the record of its settings; then
# predictions.csv and index.html.
check "one-machine run wrote $n_outputs outputs for $n_inputs inputs" test "$n_outputs" -eq $((4 * n_inputs + 2))
check "predictions.csv has two rows per image" test "$(wc -l <"$T/whole/predictions.csv")" -eq $((1 + 2 * n_inputs))

same_as_whole() {  # same_as_whole DIR: the same relative names, each byte-identical
  diff <(cd "$1" && find . -type f | sort) <(cd "$T/whole" && find . -type f | sort) >/dev/null &&
    diff -r -q "$1" "$T/whole" >/dev/null
}
submit() {  # submit OUT [sbatch options…]: prints the job id
  local out="$1"
  shift
  INPUT="$T/photos" OUTPUT="$out" VITATTN="$BIN" LOG_DIR="$out-logs" VITATTN_ARGS="$DRAW" \
    sbatch --parsable --chdir="$T/job" --output="$T/job/%A_%a.out" --cpus-per-task=1 --mem=500M "$@" \
    "$SRC/docs/slurm/vitattn-array.sbatch"
}

final_step() {  # final_step OUT ARRAY_JOB: the run without --shard, once the array is done
  VITATTN_SHARD=none submit "$1" --array=0 --dependency=afterany:"$2" --wait >/dev/null
}

# --- 1. four array tasks together: the whole batch, once, byte-identical -------------
start=$SECONDS
job=$(submit "$T/sharded" --array=1-4 --wait) || die "the array job failed"
echo "array of 4 done in $((SECONDS - start)) s"
logs=("$T/sharded-logs"/*.jsonl)
check "no task wrote a batch file" test ! -e "$T/sharded/predictions.csv" -a ! -e "$T/sharded/index.html"
final_step "$T/sharded" "$job" || die "the final step failed"
echo "final step done after $((SECONDS - start)) s"
check "after the final step the outputs are the one-machine run's, byte for byte" same_as_whole "$T/sharded"
check "the final step drew nothing: every input skipped" \
  test "$(cat "$T/sharded-logs"/vitattn-*_0.jsonl | grep -c '"status":"skipped"')" -eq "$n_inputs"
check "one log per task" test "${#logs[@]}" -eq 4
# Every input exactly once over the four logs, each with status ok, and no task idle.
check "every input in exactly one task's log, ok" "$PY" - "$T/photos" "${logs[@]}" <<'EOF'
import json, sys
from pathlib import Path
root = Path(sys.argv[1])
paths, per_task = [], []
for log in sys.argv[2:]:
    lines = [json.loads(l) for l in Path(log).read_text().splitlines()]
    assert all(l["status"] == "ok" for l in lines), log
    paths += [l["path"] for l in lines]
    per_task.append(len(lines))
every = sorted(str(p) for p in root.rglob("*") if p.is_file())
assert sorted(paths) == every, "each input once"
assert min(per_task) > 0, per_task
print("inputs per task:", per_task)
EOF

# --- 2. a task cancelled mid-run, then run again --------------------------------------
start=$SECONDS
# 0-based this time: --shard auto must take SLURM_ARRAY_TASK_MIN into account either way.
job=$(submit "$T/resumed" --array=0-3)
victim="$T/resumed-logs/vitattn-${job}_2.jsonl"
for _ in $(seq 600); do  # until task 2 has finished a few images
  [ -f "$victim" ] && [ "$(wc -l <"$victim")" -ge 3 ] && break
  sleep 0.05
done
scancel "${job}_2"
for _ in $(seq 300); do
  [ -z "$(squeue -h -j "$job" -o %i)" ] && break
  sleep 0.2
done
[ -z "$(squeue -h -j "$job" -o %i)" ] || die "job $job still in the queue 60 s after the cancel"
state2=$(scontrol show job "${job}_2" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
done2=$(grep -c '"status":"ok"' "$victim" || true)
echo "task 2: $state2 after $done2 images"
check "task 2 was cancelled (JobState=$state2)" test "$state2" = CANCELLED
# The rerun must skip what task 2 wrote before the cancel: with none written, the check of
# the skipped count below would hold whether or not the script passes --skip-existing.
check "task 2 wrote some images before the cancel ($done2)" test "$done2" -ge 1
check "the cancel left the set incomplete (else the test proves nothing)" bash -c "! diff -r -q '$T/resumed' '$T/whole' >/dev/null"
check "nothing half-written: no temporary files after the cancel" test -z "$(find "$T/resumed" -name '.*.tmp-*')"
scontrol requeue "${job}_2" || die "scontrol requeue ${job}_2 failed"
# A requeued job waits for a begin time about two minutes ahead (slurmctld's requeue delay);
# nothing here needs that pause, so it starts as soon as the node is free.
for _ in $(seq 50); do
  scontrol update JobId="${job}_2" StartTime=now 2>/dev/null && break
  sleep 0.2
done
for _ in $(seq 600); do
  [ -z "$(squeue -h -j "$job" -o %i)" ] && break
  sleep 0.2
done
state2=$(scontrol show job "${job}_2" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
echo "second array, cancel and requeue: $((SECONDS - start)) s; $SECONDS s in all"
check "the requeued task completed (JobState=$state2)" test "$state2" = COMPLETED
final_step "$T/resumed" "$job" || die "the final step after the requeue failed"
check "after the rerun and the final step the set equals the one-machine run, byte for byte" same_as_whole "$T/resumed"
check "the rerun skipped what the cancelled run had written" \
  test "$(grep -c '"status":"skipped"' "$victim" || true)" -ge "$done2"

echo "slurm: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
