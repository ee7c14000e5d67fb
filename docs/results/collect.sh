#!/usr/bin/env bash
# Copies the finished runs (status done in sweep.json: a run cut after a periodic
# evaluation has an eval/latest.json too) of one or more sweep folders into an experiment
# folder here, without checkpoints: each run's config.json, train_metrics.jsonl and eval/ go
# to EXP/runs/NAME, its log to EXP/logs/, each sweep's sweep.json to EXP/sweeps/SWEEP.json;
# then regenerates the experiment's report (figures, tables, index.md; with EXP/paper.json
# when present).
#
#   docs/results/collect.sh EXPERIMENT SWEEP_DIR [SWEEP_DIR ...]
set -euo pipefail
exp=${1:?usage: collect.sh EXPERIMENT SWEEP_DIR [SWEEP_DIR ...]}
shift
[ $# -gt 0 ] || { echo "collect.sh: no sweep folders given" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
out="$here/$exp"
mkdir -p "$out/runs" "$out/logs" "$out/sweeps"
for sweep in "$@"; do
  [ -f "$sweep/sweep.json" ] || { echo "collect.sh: $sweep has no sweep.json" >&2; exit 2; }
  cp "$sweep/sweep.json" "$out/sweeps/$(basename "$sweep").json"
  done_runs=$("${PYTHON:-python3}" - "$sweep/sweep.json" <<'PY'
import json, sys
for run in json.load(open(sys.argv[1]))["runs"]:
  if run["status"] == "done":
    print(run["name"])
  else:
    print(f"collect.sh: skipping {run['name']} ({run['status']})", file=sys.stderr)
PY
  )
  for name in $done_runs; do
    run="$sweep/$name"
    rm -rf "$out/runs/$name"
    mkdir -p "$out/runs/$name"
    cp -r "$run/config.json" "$run/train_metrics.jsonl" "$run/eval" "$out/runs/$name/"
    if [ -f "$sweep/logs/$name.log" ]; then cp "$sweep/logs/$name.log" "$out/logs/"; fi
  done
done
cd "$here/../.."
# The report names runs by their path: keep it relative to the checkout.
rel=$(realpath --relative-to=. "$out")
paper=()
if [ -f "$rel/paper.json" ]; then paper=(--paper "$rel/paper.json"); fi
"${PYTHON:-python3}" -m nupa_jax.report --workdirs "$rel"/runs/* "${paper[@]}" --out "$rel"
