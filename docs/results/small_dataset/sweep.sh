#!/usr/bin/env bash
# `tab:small_dataset_full`: the 0.1B model on 10^6 samples of 1-8 digits with the paper's
# protocol (configs/paper.py:table=small_dataset_full), RoPE / NoPE / ALiBi, 3 seeds.
#   docs/results/small_dataset/sweep.sh SWEEP_DIR      (selectors: ../paper_sweep.sh)
exec "$(dirname "$0")/../paper_sweep.sh" small_dataset_full "$@"
