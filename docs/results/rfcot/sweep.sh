#!/usr/bin/env bash
# Experiment `rfcot` (paper tab:rfft_performance, from scratch): the 0.1B preset trained on the
# table's four tasks (add_float, multiply_hard_frac, max_sci, mod_int) with rule-following
# chain-of-thought traces (answer=rfcot) and, at the same sample budget, to answer directly
# (answer=direct; one-digit tokens, packed rows, each task's whole benchmark range). Traces use
# the `digits` tokenizer in a 4,096-position context: the paper's 2,000 Llama-3.1 tokens hold
# far more digits than 2,048 one-digit positions do (README: the context budget table).
# Both arms are scored at the table's digit cells only (cells=table).
# Budget: SAMPLES (default 179,200: 700 steps of 256) a run at learning rate LR (default 1e-3)
# with WARMUP steps (default 70), cosine decay to 0: the preset's 5e-5, sized for 312,500
# steps, left both arms at 0 after 321 steps (`SAMPLES=82176 LR=5e-5 WARMUP=0` repeats that
# run). The RF-CoT arm trains ~183 samples a second on a pair of H200s
# (`CUDA_VISIBLE_DEVICES=0,1`), so the default is what one 25-minute job holds with the `direct`
# arm first and both evaluations (README).
#
#   docs/results/rfcot/sweep.sh SWEEP_DIR [sweep.py flags]
#
# ARGS adds config arguments to both arms. ANSWERS / SEEDS select part of the grid (default
# rfcot,direct and 0), PER_LENGTH the test questions per task and length (default 20);
# rerunning skips finished runs.
set -euo pipefail
exec "$(dirname "$0")/../local_sweep.sh" \
  "configs/rfcot.py:tasks=rfft,tokenizer=digits,context=4096,samples=${SAMPLES:-179200},lr=${LR:-1e-3},warmup=${WARMUP:-70},per_length=${PER_LENGTH:-20},cells=table${ARGS:+,$ARGS}" \
  "answer=${ANSWERS:-rfcot,direct};seed=${SEEDS:-0}" \
  "${1:?usage: sweep.sh SWEEP_DIR [sweep.py flags]}" "${@:2}"
