#!/usr/bin/env bash
# Experiment `generalist`: the 0.1B preset trained from scratch on every NUPA task
# (configs/mixed.py: each task over its own benchmark digit range, the frozen test questions
# excluded), scored with the rules of the paper's well-learned digit tables (scoring=paper) at
# 100 test questions per task and length. Budget: SAMPLES (default 1.4x10^7, twice the
# 7x10^6-sample run and 28 % of Llama-8B-ft's ~5x10^7) in one run over all GPUs of a 4-GPU
# host: under a minute of start-up, ~18 of training at 13.1-13.6k samples/s (measured on 4
# H200s; 4,270 on one, 7,618 on two), then ~2 of evaluation: 1,287 s in all (README: the job's
# EVAL_CUT and length). PE,
# format and tokenizer: the 100m preset's RoPE, plain format, one-digit tokens (README says
# why). NUM_WORKERS: grain workers (default 32: the mixture of 53 generators is slower to draw
# than integer addition alone).
#
#   CUDA_VISIBLE_DEVICES=0,1,2,3 docs/results/generalist/sweep.sh SWEEP_DIR [sweep.py flags]
#
# SEEDS selects seeds (default 0); rerunning skips finished runs.
set -euo pipefail
recipe="size=100m,samples=${SAMPLES:-14000000},per_length=100,scoring=paper,eval_every=0"
NUM_WORKERS=${NUM_WORKERS:-32} exec "$(dirname "$0")/../local_sweep.sh" "configs/mixed.py:$recipe" \
  "seed=${SEEDS:-0}" "${1:?usage: sweep.sh SWEEP_DIR [sweep.py flags]}" \
  --config.checkpoint.every=5000 "${@:2}"
