#!/usr/bin/env bash
# One table of configs/paper.py as a sweep: the grid task x pe x seed over the table's recipe,
# with any other recipe arguments of configs/paper.py (a protocol factor, a learning rate) fixed.
#
#   docs/results/paper_sweep.sh TABLE SWEEP_DIR [extra launch/sweep.py flags]
#
# Selectors: TASKS (required), PES (default rope,nope,alibi), SEEDS (default 0,1,2), ARGS (more
# configs/paper.py arguments, e.g. ARGS=mix=uniform), NUM_WORKERS (grain workers, default 6),
# RETRIES (how often a failed run is started again, default 1).
# GREEDY=1 also evaluates each finished run's final checkpoint with greedy decoding
# (`nupa_jax.evaluate --decoding=greedy`, into the run's eval/evaluations/), beside the run's
# own evaluation with the paper's sampling. Rerunning skips what is done.
# SIGTERM or Ctrl-C is passed on to the sweep as SIGTERM (it stops its run, which saves a
# checkpoint); this script waits for that to finish and exits without the greedy evaluations.
set -uo pipefail
table=${1:?usage: paper_sweep.sh TABLE SWEEP_DIR [sweep.py flags]}
out=${2:?usage: paper_sweep.sh TABLE SWEEP_DIR [sweep.py flags]}
shift 2
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
stopped=
docs/results/local_sweep.sh "configs/paper.py:table=$table${ARGS:+,$ARGS}" \
  "task=${TASKS:?set TASKS};pe=${PES:-rope,nope,alibi};seed=${SEEDS:-0,1,2}" "$out" "$@" &
sweep=$!  # local_sweep.sh execs the sweep: this is its process
trap 'stopped=1; kill -TERM "$sweep" 2>/dev/null' INT TERM
# `wait` returns early when a trap runs: wait again until the sweep has exited.
while wait "$sweep"; status=$?; [ -n "$(jobs -pr)" ]; do :; done
trap - INT TERM
[ -z "$stopped" ] || exit "$status"
if [ -n "${GREEDY:-}" ]; then
  for run in $("$py" -c 'import json, sys
print(*(r["workdir"] for r in json.load(open(sys.argv[1]))["runs"] if r["status"] == "done"))' \
      "$out/sweep.json"); do
    ls "$run"/eval/evaluations/*_greedy_* >/dev/null 2>&1 && continue
    "$py" -m nupa_jax.evaluate --workdir="$run" --checkpoint=latest --decoding=greedy \
      >>"$out/logs/$(basename "$run").greedy.log" 2>&1 || status=1
  done
fi
exit "$status"
