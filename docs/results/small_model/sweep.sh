#!/usr/bin/env bash
# `tab:small_model_full`: the paper's 2-layer 1.3M model on 1-8 digits with the paper's
# protocol (configs/paper.py:table=small_model_full), RoPE / NoPE / ALiBi.
#   docs/results/small_model/sweep.sh SWEEP_DIR      (selectors: ../paper_sweep.sh)
exec "$(dirname "$0")/../paper_sweep.sh" small_model_full "$@"
