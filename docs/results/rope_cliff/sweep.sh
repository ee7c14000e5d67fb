#!/usr/bin/env bash
# Experiment `rope_cliff` (paper `tab:rope_perf`, `fig:PE_big`): the 0.1B model trained on 1-8
# digits until the in-domain exact match saturates, tested on 1-20: RoPE collapses at 9 digits,
# NoPE / ALiBi keep going (alibi_nupa: the official code's ALiBi sign, the PE behind the
# paper's ALiBi numbers). Scaled down from the paper's 8x10^7 samples to 4x10^6 (15,625 steps
# of 256; pe_small's 10^6 already reaches 0.97 exact match at 8 digits), 2 seeds; evaluation
# every 5,000 steps shows when the cliff forms. Budget: ~3.5 H200-minutes a run, 16 runs.
#
#   docs/results/rope_cliff/sweep.sh SWEEP_DIR [extra launch/sweep.py flags]
#
# TASKS / PES / SEEDS select part of the grid (e.g. one GPU per task); rerunning skips
# finished runs.
set -euo pipefail
grid="task=${TASKS:-add_int,add_float};pe=${PES:-rope,nope,alibi,alibi_nupa}"
exec "$(dirname "$0")/../local_sweep.sh" \
  "configs/pe.py:size=100m,steps=15625,eval_every=5000,per_length=200" "$grid;seed=${SEEDS:-0,1}" \
  "${1:?usage: sweep.sh SWEEP_DIR [sweep.py flags]}" --config.checkpoint.every=2500 "${@:2}"
