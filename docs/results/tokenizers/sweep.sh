#!/usr/bin/env bash
# Experiment `tokenizers` (paper `tokenizer_task`, `fig:random_tokenizer`): 1-, 2-, 3-digit
# tokenizers and the random 2 / 3 tokenizers on integer addition, in-domain (1-8 digits) and
# out-of-domain (9-20) exact match. The paper uses the 0.9B model on 10^7 samples per length;
# scaled down to the 0.1B model and 2x10^6 samples (7,813 steps of 256), one seed.
# Budget: ~2.5 H200-minutes a run, 5 runs (SIZE=0.9b for the paper's model, ~5x slower).
#
#   docs/results/tokenizers/sweep.sh SWEEP_DIR [extra launch/sweep.py flags]
set -euo pipefail
exec "$(dirname "$0")/../local_sweep.sh" \
  "configs/tokenizer.py:size=${SIZE:-100m},task=add_int,steps=7813,per_length=200" \
  "tok=${TOKS:-1,2,3,random2,random3}" \
  "${1:?usage: sweep.sh SWEEP_DIR [sweep.py flags]}" --config.checkpoint.every=2500 "${@:2}"
