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
# before SECONDS, and each cut run without an evaluation is evaluated from the checkpoint it
# saved at the stop (`nupa_jax.evaluate --checkpoint=latest`) into its eval/latest.json, whose
# `_meta.step` says how far it got (`CUT=1 launch/collect.sh` takes such runs). A run whose
# schedule is nearly done by then gives a usable result instead of none when the job ends.
set -uo pipefail
seconds=${1:?usage: run_on_gpus.sh SECONDS ROOT ARCHIVE QUEUE [QUEUE ...]}
root=${2:?missing ROOT}
archive=${3:?missing ARCHIVE}
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

# Evaluates, on GPU(s) $1, the runs under $2 that were cut without an evaluation.
evaluate_cut() {
  local gpu=$1 dir=$2 run left
  for run in "$dir"/*/; do
    run=${run%/}
    [ -d "$run/checkpoints" ] && [ ! -f "$run/eval/latest.json" ] || continue
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
  if [ -n "${EVAL_CUT:-}" ]; then evaluate_cut "$gpu" "$root/$name"; fi
}

queue_index=0
queues=()
for queue in "$@"; do
  gpu=$(( queue_index % gpus ))
  (
    status=0
    IFS=';' read -r -a items <<<"$queue"
    for item in "${items[@]}"; do run_item "$gpu" "$item" || status=$?; done
    exit "$status"
  ) &
  queues+=("$!")
  queue_index=$((queue_index + 1))
done
failed=0
for pid in "${queues[@]}"; do wait "$pid" || failed=1; done
tar czf "$archive" --exclude=checkpoints --exclude=tensorboard -C "$root" .
echo "archived $root to $archive ($(du -h "$archive" | cut -f1))"
if [ "$failed" -ne 0 ]; then
  echo "run_on_gpus.sh: a sweep failed or was not found (see the GPU lines above)" >&2
  exit 1
fi
