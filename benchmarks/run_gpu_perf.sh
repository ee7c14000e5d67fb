#!/usr/bin/env bash
# Where the 100m train step's time goes (profile_train.py) and what each candidate speed-up
# buys at the paper's batch of 256, next to the HF reference on the same card, in one go.
# Results go to $OUT (perf.jsonl, profile.jsonl, logs). Run from the repository root on a GPU
# machine with nupa_jax installed (a CUDA jax wheel, and torch + transformers for the reference).
set -uo pipefail
OUT=${OUT:-/tmp/nupa_gpu}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
export PYTHONUNBUFFERED=1
bench() {  # bench LABEL [benchmark_train args...]
  local label=$1; shift
  echo "== $label" | tee -a "$OUT/perf.log"
  python3 benchmarks/benchmark_train.py --size=100m --steps=30 --json="$OUT/perf_$label.jsonl" \
    "$@" 2>&1 | grep -v -i warning | tee -a "$OUT/perf.log"
}
python3 benchmarks/profile_train.py --size=100m --batch=256 --json="$OUT/profile.jsonl" \
  2>&1 | grep -v -i warning | tee "$OUT/profile.log"
bench base --batches="256,${BIG_BATCH:-8192}" --reference --reference_batches=256
bench attn_xla --batches=256 --override model.attention_impl=xla
bench mu_bf16 --batches=256 --override train.mu_dtype=bfloat16
bench rows8 --batches=256 --samples_per_row=8
XLA_FLAGS="--xla_gpu_enable_triton_gemm=false" bench no_triton_gemm --batches=256
cat "$OUT"/perf_*.jsonl > "$OUT/perf.jsonl"
