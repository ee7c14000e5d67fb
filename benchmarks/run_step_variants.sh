#!/usr/bin/env bash
# The train step under every speed knob at the paper's batch of 256 and at 8192 (for MFU), in
# one process on the visible GPUs (benchmark_step_variants.py: first-step parity with the
# default, then interleaved timing rounds), and a profile of the fastest variant at the first
# batch size with each kernel traced back to its HLO instruction and line of code
# (profile_train.py).
#
#   bash benchmarks/run_step_variants.sh OUT_DIR            # 100m on one GPU, about 3 minutes
#   SIZE=tiny BATCHES=16,32 STEPS=2 ROUNDS=1 bash benchmarks/run_step_variants.sh OUT_DIR  # CPU
#
# VARIANTS=base,fused (comma separated, the first is the baseline) times only those.
# OVERRIDES="model.num_layers=1 model.hidden=32" (space separated KEY=VALUE config overrides)
# apply to every variant and to the profile.
# PROFILE_XLA_FLAGS are added to XLA_FLAGS for the profile only, e.g.
# --xla_gpu_enable_command_buffer= (kernels outside CUDA graphs, so that each maps back to its
# HLO instruction). Several visible GPUs (CUDA_VISIBLE_DEVICES=0,1,2,3): the step runs over all
# of them on the config's mesh; the profile reads the first GPU's kernels.
# OUT_DIR (default $OUT) receives: gpu.txt, variants.jsonl (one line per variant and batch:
# step_ms, samples_per_s, mfu, speedup, first_loss, first_grad_norm), variants.log, best.txt,
# profile.jsonl, profile.log and best_hlo.txt.gz (the fastest variant's compiled program).
# Run from anywhere, with a Python that has nupa_jax's requirements ($PYTHON, default python3).
set -euo pipefail
OUT=${1:-${OUT:?usage: run_step_variants.sh OUT_DIR}}
PYTHON=${PYTHON:-python3}
BATCHES=${BATCHES:-256,8192}
read -r -a override_words <<< "${OVERRIDES:-}"
overrides=()
for item in "${override_words[@]}"; do overrides+=("--override=$item"); done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
fi
"$PYTHON" benchmarks/benchmark_step_variants.py --size="${SIZE:-100m}" --batches="$BATCHES" \
  --steps="${STEPS:-20}" --rounds="${ROUNDS:-5}" --json="$OUT/variants.jsonl" \
  ${VARIANTS:+--variants="$VARIANTS"} --best_to="$OUT/best.txt" "${overrides[@]}" 2>&1 |
  tee "$OUT/variants.log"
# XLA reads a blank XLA_FLAGS as a file name: set it only when there are flags.
PROFILE_FLAGS="${XLA_FLAGS:-} ${PROFILE_XLA_FLAGS:-}"
if [[ $PROFILE_FLAGS == *[![:space:]]* ]]; then
  export XLA_FLAGS=$PROFILE_FLAGS
else
  unset XLA_FLAGS
fi
"$PYTHON" benchmarks/profile_train.py --size="${SIZE:-100m}" --batch="${BATCHES%%,*}" \
  --variant="$(cat "$OUT/best.txt")" --json="$OUT/profile.jsonl" \
  --hlo_out="$OUT/best_hlo.txt" "${overrides[@]}" 2>&1 | tee "$OUT/profile.log"
gzip -f "$OUT/best_hlo.txt"
