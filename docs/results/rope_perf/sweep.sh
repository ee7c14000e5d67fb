#!/usr/bin/env bash
# `tab:rope_perf` at the paper's full budget: RoPE on 1-8 digits, ~5.1x10^7 samples of the
# paper's length mix (configs/paper.py:table=rope_perf), 3 seeds; D8 / D9 exact match, digit
# match and dlength. One run fills a 4-GPU host for ~22 minutes (give the item
# CUDA_VISIBLE_DEVICES=0,1,2,3); checkpoints every 5,000 steps let a cut run resume.
#   docs/results/rope_perf/sweep.sh SWEEP_DIR      (selectors: ../paper_sweep.sh)
PES=${PES:-rope} exec "$(dirname "$0")/../paper_sweep.sh" rope_perf "$@"
