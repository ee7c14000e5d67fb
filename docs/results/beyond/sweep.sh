#!/usr/bin/env bash
# Experiment `beyond` (past the paper): integer addition trained on 1-20 digits, tested to 100
# (`configs/beyond.py`: every benchmark length to 20, then every 5th length to 100), with the
# length-generalization schemes nupa_jax offers (Abacus and coupled positions with random
# offsets, FIRE with randomized positions) against the paper's RoPE / NoPE / ALiBi, all in the
# same units-first format. 0.1B model, 2.6x10^6 samples (10,000 steps of 256) at lr 1e-4 with
# 500 warmup steps for every PE; the target is >= 95% exact match at 100 digits.
# Budget: ~5 H200-minutes a run, 6 runs.
# HINTS=true adds index hints to every run (a grid axis: names gain `_hints-true`), e.g.
# PES=fire HINTS=true for Zhou et al.'s FIRE recipe (FIRE + random positions + index hints).
#
#   docs/results/beyond/sweep.sh SWEEP_DIR [extra launch/sweep.py flags]
set -euo pipefail
grid="pe=${PES:-abacus,coupled,fire,rope,nope,alibi}"
if [ -n "${HINTS:-}" ]; then grid+=";hints=$HINTS"; fi
recipe=size=100m,stride=5,steps=10000,lr=1e-4,warmup=500,eval_every=5000,per_length=100
exec "$(dirname "$0")/../local_sweep.sh" "configs/beyond.py:$recipe" "$grid" \
  "${1:?usage: sweep.sh SWEEP_DIR [sweep.py flags]}" \
  --config.eval.batch_size=1024 --config.checkpoint.every=2500 "${@:2}"
