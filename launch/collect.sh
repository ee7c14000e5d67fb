#!/usr/bin/env bash
# Copies the finished runs (status done in sweep.json: a run cut after a periodic evaluation
# has an eval/latest.json too) of one or more sweep folders, e.g. those launch/run_on_gpus.sh
# wrote, into an experiment folder of the repository's docs/results, without checkpoints: each
# run's config.json, train_metrics.jsonl and eval/ go to EXP/runs/NAME, its log to EXP/logs/,
# each sweep's sweep.json to EXP/sweeps/SWEEP.json; then regenerates the experiment's report
# (figures, tables, index.md; with EXP/paper.json when present). Two sweeps of one call holding
# a finished run of the same name are refused. CUT=1 also takes the runs a deadline stopped
# (status interrupted) that have an eval/latest.json: a periodic evaluation, or the evaluation of
# the checkpoint saved at the stop (`python -m nupa_jax.evaluate --workdir=RUN
# --checkpoint=latest --out=RUN/eval/latest.json`); its `_meta.step` says how far the run got.
#
#   [CUT=1] launch/collect.sh EXPERIMENT SWEEP_DIR [SWEEP_DIR ...]
set -euo pipefail
exp=${1:?usage: collect.sh EXPERIMENT SWEEP_DIR [SWEEP_DIR ...]}
shift
[ $# -gt 0 ] || { echo "collect.sh: no sweep folders given" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
out="$repo/docs/results/$exp"
for sweep in "$@"; do
  [ -f "$sweep/sweep.json" ] || { echo "collect.sh: $sweep has no sweep.json" >&2; exit 2; }
done
# "SWEEP<TAB>NAME" of every finished run, checked before anything is copied.
runs=$(CUT=${CUT:-} "${PYTHON:-python3}" - "$@" <<'PY'
import json, os, sys
taken = {}  # run name -> the sweep holding it
for sweep in sys.argv[1:]:
  for run in json.load(open(f"{sweep}/sweep.json"))["runs"]:
    name = run["name"]
    cut = (os.environ["CUT"] == "1" and run["status"] == "interrupted"
           and os.path.isfile(f"{sweep}/{name}/eval/latest.json"))
    if run["status"] != "done" and not cut:
      print(f"collect.sh: skipping {name} ({run['status']})", file=sys.stderr)
    elif name in taken:  # one would silently replace the other
      sys.exit(f"collect.sh: {taken[name]} and {sweep} both hold run {name}; collect them "
               "into different experiment folders")
    else:
      taken[name] = sweep
      print(f"{sweep}\t{name}")
PY
) || exit 2
mkdir -p "$out/runs" "$out/logs" "$out/sweeps"
for sweep in "$@"; do cp "$sweep/sweep.json" "$out/sweeps/$(basename "$sweep").json"; done
while IFS=$'\t' read -r sweep name; do
  [ -n "$name" ] || continue
  rm -rf "$out/runs/$name"
  mkdir -p "$out/runs/$name"
  cp -r "$sweep/$name/config.json" "$sweep/$name/train_metrics.jsonl" "$sweep/$name/eval" \
    "$out/runs/$name/"
  if [ -f "$sweep/logs/$name.log" ]; then cp "$sweep/logs/$name.log" "$out/logs/"; fi
done <<<"$runs"
cd "$repo"
# The report names runs by their path: keep it relative to the checkout.
rel=$(realpath --relative-to=. "$out")
paper=()
if [ -f "$rel/paper.json" ]; then paper=(--paper "$rel/paper.json"); fi
"${PYTHON:-python3}" -m nupa_jax.report --workdirs "$rel"/runs/* "${paper[@]}" --out "$rel"
