#!/usr/bin/env bash
# Runs queues of experiment sweeps on the GPUs of one machine under a wall-clock deadline, one
# queue per GPU, then archives what they wrote (no checkpoints, no TensorBoard files): what a
# SLURM job or any other allocation with a time limit needs. A run still going at the deadline
# is stopped with SIGTERM (its sweep records it as interrupted, with its time so far); the same
# command run again with the same ROOT, while ROOT's checkpoints are still there, skips
# finished runs and resumes the cut ones, so a long queue can span several allocations.
#
#   launch/run_on_gpus.sh SECONDS ROOT ARCHIVE "QUEUE for GPU 0" ["QUEUE for GPU 1" ...]
#
# A QUEUE is `;`-separated sweeps, each `[VAR=VALUE ...] SWEEP`: SWEEP is an experiment folder
# of SWEEPS_DIR (its sweep.sh) or a sweep file under it, VAR=VALUE the sweep file's selectors.
# Each writes ROOT/NAME, NAME made of the experiment, the sweep file's name if not sweep.sh,
# and the selector values, e.g.
#   launch/run_on_gpus.sh 540 /tmp/r /tmp/results.tgz \
#     "PES=abacus,coupled beyond; tokenizers" \
#     "TASKS=add_int SEEDS=0 rope_cliff"
# gives /tmp/r/beyond_abacus-coupled, /tmp/r/tokenizers (GPU 0), /tmp/r/rope_cliff_add_int_0
# (GPU 1); `launch/collect.sh EXPERIMENT FOLDER...` takes them from there.
# An item may set CUDA_VISIBLE_DEVICES itself (a run over several GPUs; the other queues must
# then name theirs too). QUEUES_PER_GPU=K (default 1) takes up to K queues a GPU, queue i on
# GPU i mod (number of GPUs), for runs too small to fill one (the 1.3M model, 10^6-sample
# runs): each process then gets 0.9 / K of its GPU's memory (XLA_PYTHON_CLIENT_MEM_FRACTION,
# unless set), and NUM_WORKERS should leave the host's CPUs enough for K times the runs.
# SWEEPS_DIR (default: the repository's docs/results) is where SWEEP names are looked up; a
# sweep does not start with MIN_SECONDS (default 30) or less left. Exit
# status 1 when a sweep failed (a run in it failed) or does not exist; one cut by the deadline
# has not failed.
# EVAL_CUT=S keeps the last S seconds for the runs the deadline cut: training stops S seconds
# before SECONDS, and each cut run whose eval/latest.json is missing or older than its newest
# checkpoint (a periodic evaluation; the cut evaluation of an earlier job, before the run
# resumed) is evaluated from the checkpoint it saved at the stop (`nupa_jax.evaluate
# --checkpoint=latest`) into its eval/latest.json, whose `_meta.step` says how far it got
# (`CUT=1 launch/collect.sh` takes such runs). A run whose schedule is nearly done by then gives
# a usable result instead of none when the job ends. A cut sweep in which a run failed still
# fails the command.
# A TERM or Ctrl-C (a scheduler's stop, a preemption) ends the job early but in order: each
# running sweep or evaluation is stopped as the deadline would stop it (its run saves a
# checkpoint), no further sweep starts, what was written is archived, and the exit status is
# 128 + the signal's number.
set -uo pipefail
seconds=${1:?usage: run_on_gpus.sh SECONDS ROOT ARCHIVE QUEUE [QUEUE ...]}
root=$(realpath -m "${2:?missing ROOT}")  # the sweeps run from the repository's root
archive=$(realpath -m "${3:?missing ARCHIVE}")
shift 3
[ $# -gt 0 ] || { echo "run_on_gpus.sh: no queues given" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
here=${SWEEPS_DIR:-$repo/docs/results}
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
per_gpu=${QUEUES_PER_GPU:-1}
if ! [[ "$per_gpu" =~ ^[1-9][0-9]*$ ]]; then
  echo "run_on_gpus.sh: QUEUES_PER_GPU=$per_gpu: give a whole number of 1 or more" >&2
  exit 2
fi
if [ "$#" -gt $(( gpus * per_gpu )) ]; then
  echo "run_on_gpus.sh: $# queues but $gpus GPUs$([ "$per_gpu" -gt 1 ] &&
    echo " x QUEUES_PER_GPU=$per_gpu")" >&2
  exit 2
fi
if [ "$per_gpu" -gt 1 ] && [ -z "${XLA_PYTHON_CLIENT_MEM_FRACTION:-}" ]; then
  XLA_PYTHON_CLIENT_MEM_FRACTION=$(awk -v k="$per_gpu" 'BEGIN { printf "%.2f", 0.9 / k }')
  export XLA_PYTHON_CLIENT_MEM_FRACTION
fi
deadline=$(( $(date +%s) + seconds ))
train_deadline=$(( deadline - ${EVAL_CUT:-0} ))
mkdir -p "$root"

# Whether run $1, cut with checkpoints, lacks an evaluation of its newest checkpoint.
needs_evaluation() {
  [ -d "$1/checkpoints" ] || return 1
  python3 - "$1" <<'PY'
import json, pathlib, sys
run = pathlib.Path(sys.argv[1])
steps = [int(p.name) for p in (run / "checkpoints").iterdir() if p.name.isdigit()]
try:
  evaluated = json.loads((run / "eval" / "latest.json").read_text())["_meta"]["step"]
except FileNotFoundError:
  sys.exit(0)
except (ValueError, KeyError, TypeError):  # not a results file: take it as older
  evaluated = -1
sys.exit(0 if steps and max(steps) > evaluated else 1)
PY
}

# Whether sweep folder $1 recorded a run that failed or was refused.
sweep_failed() {
  [ -f "$1/sweep.json" ] || return 1
  python3 - "$1/sweep.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
sys.exit(0 if any(r["status"] in ("failed", "refused") for r in runs) else 1)
PY
}

# Evaluates, on GPU(s) $1, the runs under $2 that were cut without an evaluation of their
# stop checkpoint.
evaluate_cut() {
  local gpu=$1 dir=$2 run left
  for run in "$dir"/*/; do
    run=${run%/}
    needs_evaluation "$run" || continue
    left=$(( deadline - $(date +%s) ))
    [ "$left" -gt 0 ] || return 0
    echo "GPU $gpu: evaluating cut run $run ($left s left)"
    (cd "$repo" && CUDA_VISIBLE_DEVICES="$gpu" timeout -s TERM "$left" "${PYTHON:-python3}" -m \
        nupa_jax.evaluate --workdir="$run" --checkpoint=latest --out="$run/eval/latest.json") \
      >>"$dir.cut_eval.log" 2>&1 ||
      echo "GPU $gpu: evaluation of $run failed (see $dir.cut_eval.log)" >&2
  done
}

# Runs one `[VAR=VALUE ...] SWEEP` item on GPU $1 until the deadline.
run_item() {
  local gpu=$1 item=$2 words name file left
  read -r -a words <<<"$item"
  [ "${#words[@]}" -gt 0 ] || return 0
  local sweep=${words[-1]} vars=("${words[@]:0:${#words[@]}-1}")
  file="$here/$sweep"
  [ -d "$file" ] && file="$file/sweep.sh"
  [ -f "$file" ] || { echo "run_on_gpus.sh: no sweep file $file" >&2; return 2; }
  name=${sweep%%/*}
  if [[ "$sweep" == */* ]]; then  # a sweep file other than sweep.sh: pe_small/sweep_1.3m.sh
    local stem=${sweep##*/}
    stem=${stem%.sh}
    name+="_${stem#sweep_}"
  fi
  for v in "${vars[@]}"; do
    if [[ "$v" == CUDA_VISIBLE_DEVICES=* ]]; then gpu=${v#*=}; else name+="_${v#*=}"; fi
  done
  name=${name//,/-}
  left=$(( train_deadline - $(date +%s) ))
  if [ "$left" -le "${MIN_SECONDS:-30}" ]; then
    echo "GPU $gpu: no time left for $name" >&2
    return 0
  fi
  echo "GPU $gpu: $name ($left s left)"
  local status=0
  env CUDA_VISIBLE_DEVICES="$gpu" "${vars[@]}" timeout -s TERM "$left" "$file" "$root/$name" \
    >"$root/$name.out" 2>&1 || status=$?
  echo "GPU $gpu: $name exited with status $status ($(tail -n 1 "$root/$name.out"))"
  [ "$status" -eq 124 ] || return "$status"  # 124: cut by the deadline, not a failure
  if [ -n "${EVAL_CUT:-}" ] && [ -z "$stopped" ]; then evaluate_cut "$gpu" "$root/$name"; fi
  if sweep_failed "$root/$name"; then
    echo "GPU $gpu: $name: a run failed before the deadline (see $root/$name/sweep.json)" >&2
    return 1
  fi
}

# TERM to the `timeout` processes under process $1, each of which passes it on to its sweep or
# evaluation once (signalling the sweep's own processes too would stop its run twice).
stop_timeouts() {
  local child
  for child in $(pgrep -P "$1"); do
    if [ "$(ps -o comm= -p "$child")" = timeout ]; then
      kill -TERM "$child" 2>/dev/null
    else
      stop_timeouts "$child"
    fi
  done
}

signalled=0
stop_queues() {
  signalled=$1
  echo "run_on_gpus.sh: stopping on $( [ "$1" -eq 130 ] && echo SIGINT || echo SIGTERM):" \
    "the running sweeps save and stop, no other starts" >&2
  for pid in "${queues[@]}"; do
    kill -TERM "$pid" 2>/dev/null  # the queue starts nothing more
    stop_timeouts "$pid"
  done
}

# The exit status of child $1, waited for through the signals this script traps.
wait_for() {
  local status
  while :; do
    wait "$1"
    status=$?
    kill -0 "$1" 2>/dev/null || return "$status"
  done
}

queue_index=0
queues=()
trap 'stop_queues 130' INT
trap 'stop_queues 143' TERM
for queue in "$@"; do
  [ "$signalled" -eq 0 ] || break
  gpu=$(( queue_index % gpus ))
  (
    stopped=
    trap 'stopped=1' TERM
    trap '' INT  # a terminal's Ctrl-C reaches this script, which stops the queue in order
    status=0
    IFS=';' read -r -a items <<<"$queue"
    for item in "${items[@]}"; do
      [ -z "$stopped" ] || break
      run_item "$gpu" "$item" || status=$?
    done
    exit "$status"
  ) &
  queues+=("$!")
  queue_index=$((queue_index + 1))
done
failed=0
for pid in "${queues[@]}"; do wait_for "$pid" || failed=1; done
tar czf "$archive" --exclude=checkpoints --exclude=tensorboard -C "$root" .
echo "archived $root to $archive ($(du -h "$archive" | cut -f1))"
if [ "$signalled" -ne 0 ]; then
  exit "$signalled"
fi
if [ "$failed" -ne 0 ]; then
  echo "run_on_gpus.sh: a sweep failed or was not found (see the GPU lines above)" >&2
  exit 1
fi
