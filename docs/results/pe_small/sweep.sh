#!/usr/bin/env bash
# Experiment `pe_small` (paper Table `tab:small_dataset_full`): the 0.1B model trained on only
# 10^6 samples of 1-8 digits, with RoPE / NoPE / ALiBi, on integer addition, float addition,
# fraction multiplication (easy) and scientific-notation addition; tested on 1-20 digits
# (200 questions per length). 10^6 samples = 3,907 steps of the paper's 256; everything else
# is the paper's recipe (configs/pe.py:size=100m: AdamW 5e-5, cosine, weight decay 0.01).
#
#   docs/results/pe_small/sweep.sh SWEEP_DIR [extra launch/sweep.py flags]
#
# TASKS (default: all four) and PES (default rope,nope,alibi) select a part of the grid, e.g.
# one GPU per task pair:
#   CUDA_VISIBLE_DEVICES=0 TASKS=add_int,add_float docs/results/pe_small/sweep.sh runs/pe_a
# ARGS adds configs/pe.py arguments to the recipe (sweep_official.sh: objective=official).
# Rerunning in the same SWEEP_DIR skips the runs already done.
set -euo pipefail
exec "$(dirname "$0")/../local_sweep.sh" \
  "configs/pe.py:size=100m,steps=3907,per_length=200${ARGS:+,$ARGS}" \
  "task=${TASKS:-add_int,add_float,multiply_easy_frac,add_sci};pe=${PES:-rope,nope,alibi}" \
  "${1:?usage: sweep.sh SWEEP_DIR [sweep.py flags]}" --config.checkpoint.every=100000 "${@:2}"
