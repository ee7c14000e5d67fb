#!/usr/bin/env bash
# `tab:rev_vs_pad`, integer-addition block, at the paper's full budget
# (configs/paper.py:table=rev_vs_pad): one reverse x pad cell per call, RoPE by default (the
# paper's stated architecture; its plain-format cell is `rope_perf`'s run), e.g.
#   ARGS=reverse=int,pad=true TASKS=add_int SEEDS=0 docs/results/rev_vs_pad/sweep.sh SWEEP_DIR
PES=${PES:-rope} exec "$(dirname "$0")/../paper_sweep.sh" rev_vs_pad "$@"
