#!/usr/bin/env bash
# The other half of `pe_small` (paper `tab:small_model_full`): the paper's 2-layer 1.3M model
# trained on 1-8 digits until it stops improving, RoPE / NoPE / ALiBi on the four tasks, tested
# on 1-20 digits. `configs/pe.py:size=1.3m` (2 layers, hidden 256; lr 1e-3 with warmup, batch
# 256); 40,000 steps (10^7 samples), evaluation every 10,000 steps to see the plateau.
# The model is far too small to fill a GPU: run several sweeps side by side on one card
# (TASKS=... each; PES=... selects positional encodings). Measured (README): 253-272 s a run
# alone on an H100; 448-461 s a run with nine at once on a 4x H200 host (QUEUES_PER_GPU=3).
# SEEDS= (e.g. SEEDS=1) adds a seed axis to the grid; without it runs use seed 0 and keep the
# names of the published ones.
#
#   docs/results/pe_small/sweep_1.3m.sh SWEEP_DIR [extra launch/sweep.py flags]
set -euo pipefail
grid="task=${TASKS:-add_int,add_float,multiply_easy_frac,add_sci};pe=${PES:-rope,nope,alibi}"
if [ -n "${SEEDS:-}" ]; then grid+=";seed=$SEEDS"; fi
NUM_WORKERS=${NUM_WORKERS:-2} exec "$(dirname "$0")/../local_sweep.sh" \
  "configs/pe.py:size=1.3m,steps=40000,eval_every=10000,per_length=200" "$grid" \
  "${1:?usage: sweep_1.3m.sh SWEEP_DIR [sweep.py flags]}" --config.checkpoint.every=2500 "${@:2}"
