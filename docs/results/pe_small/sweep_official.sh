#!/usr/bin/env bash
# `pe_small` under the official NUPA code's training objective and ALiBi, to test why the
# paper's small-data PE ranking did not reproduce (README.md here): one sample per row, the
# right-padding up to the batch's longest sample kept in the loss (`data.loss_on_padding`, as
# the official labels do), and ALiBi with the official bias sign (`pe=alibi_nupa`), next to
# RoPE and NoPE under the same objective: sweep.sh's recipe (10^6 samples) with
# `objective=official` (configs/pe.py).
# Budget: ~2.5 GPU-minutes a run (padded rows: ~40 % more positions), 12 runs.
#
#   docs/results/pe_small/sweep_official.sh SWEEP_DIR [extra launch/sweep.py flags]
#
# TASKS and PES (default rope,nope,alibi_nupa) select a part of the grid. Its runs share
# sweep.sh's run names: collect them apart, `launch/collect.sh pe_small/official DIR...`.
set -euo pipefail
PES=${PES:-rope,nope,alibi_nupa} ARGS=objective=official${ARGS:+,$ARGS} \
  exec "$(dirname "$0")/sweep.sh" "${1:?usage: sweep_official.sh SWEEP_DIR [sweep.py flags]}" "${@:2}"
