#!/usr/bin/env bash
# Experiment `formats` (paper `tab:rev_vs_pad`, `tab:rev_vs_idx`): reverse formatting x zero
# padding on integer and float addition, reverse x index hints on integer addition,
# multiplication (hard) and maximum; the 0.1B model on 1-8 digits, exact match at 9 and 10
# digits. Scaled down from the paper's 8x10^7 samples to 2x10^6 (7,813 steps of 256), one seed.
# Budget: ~3 H100-minutes a run (measured: 2.2-3.5), 26 runs (PART selects a table block):
#   PART=int_pad    reverse {none,int} x pad on add_int                          (4 runs)
#   PART=float_pad  reverse {none,int,dec,each,total} x pad on add_float        (10 runs)
#   PART=idx        reverse {none,int} x hints on add_int, multiply_hard_int, max_int (12 runs;
#                   its two add_int runs without hints repeat int_pad's settings)
#
# REVERSES= / TASKS= / HINTS= narrow a block further (e.g. PART=float_pad REVERSES=dec,each),
# so that each part fits one GPU job. PE= sets the positional encoding of every run (default
# rope, the paper's default architecture; PE=nope tests whether the paper's format tables came
# from NoPE models, see README.md): collect such runs into formats/PE. HINT_OFFSET=K shifts each
# training sample's index hints by an offset drawn from 0..K (configs/formats.py), so that the
# hints of 9 and 10 digits are trained: collect such runs into their own folder (same names).
#
#   PART=int_pad docs/results/formats/sweep.sh SWEEP_DIR [extra launch/sweep.py flags]
set -euo pipefail
case "${PART:?set PART=int_pad, float_pad or idx}" in
  int_pad) grid="task=add_int;reverse=${REVERSES:-none,int};pad=false,true" ;;
  float_pad) grid="task=add_float;reverse=${REVERSES:-none,int,dec,each,total};pad=false,true" ;;
  idx) grid="task=${TASKS:-add_int,multiply_hard_int,max_int}"
       grid+=";reverse=${REVERSES:-none,int};hints=${HINTS:-false,true}" ;;
  *) echo "unknown PART=$PART; known: int_pad, float_pad, idx" >&2; exit 2 ;;
esac
recipe="size=100m,pe=${PE:-rope},steps=7813,per_length=200,test=12${HINT_OFFSET:+,hint_offset=$HINT_OFFSET}"
exec "$(dirname "$0")/../local_sweep.sh" "configs/formats.py:$recipe" "$grid" \
  "${1:?usage: PART=... sweep.sh SWEEP_DIR [sweep.py flags]}" \
  --config.checkpoint.every=2500 "${@:2}"
