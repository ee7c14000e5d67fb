#!/usr/bin/env bash
# Experiment `beyond`, second budget: the schemes that extrapolate (Abacus, coupled positions)
# trained twice as long as in sweep.sh (20,000 steps of 256 = 5.1x10^6 samples), everything
# else equal, to see how far more training carries them past the training length. Budget:
# ~7 H100-minutes a run on two GPUs (data parallel), CUDA_VISIBLE_DEVICES=0,1.
# STEPS= trains longer still (e.g. STEPS=90000 with CUDA_VISIBLE_DEVICES=0,1: 23x10^6 samples,
# 22 minutes on two H100s; rerun the same command to resume a run cut at a command's end) and
# EVAL_EVERY= spaces the evaluations.
# SEEDS= (e.g. SEEDS=1) adds a seed axis to the grid; without it runs use seed 0 and keep the
# names of the published ones.
#
#   docs/results/beyond/sweep_longer.sh SWEEP_DIR [extra launch/sweep.py flags]
set -euo pipefail
# The step count is a grid key over the config field (not the `steps` argument) so that runs
# keep the published names, `pe-abacus_train.steps-20000`.
grid="pe=${PES:-abacus,coupled};train.steps=${STEPS:-20000}"
if [ -n "${SEEDS:-}" ]; then grid+=";seed=$SEEDS"; fi
recipe="size=100m,stride=5,lr=1e-4,warmup=500,eval_every=${EVAL_EVERY:-5000},per_length=100"
exec "$(dirname "$0")/../local_sweep.sh" "configs/beyond.py:$recipe" "$grid" \
  "${1:?usage: sweep_longer.sh SWEEP_DIR [sweep.py flags]}" \
  --config.eval.batch_size=1024 --config.checkpoint.every=2500 "${@:2}"
