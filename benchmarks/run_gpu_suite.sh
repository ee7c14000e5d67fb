#!/usr/bin/env bash
# The trainer's throughput / MFU next to the HF PyTorch reference, and the data pipeline's
# rate, on the same card in one go (cards and days differ). Results (JSON lines and logs) go
# to $OUT. Run from the repository root on a GPU machine with nupa_jax installed (a CUDA jax
# wheel, and torch + transformers for the reference).
set -uo pipefail
OUT=${OUT:-/tmp/nupa_gpu}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 benchmarks/benchmark_train.py --size=100m --batches=${BATCHES:-256,1024,4096,8192} \
  --reference --reference_batches=256,1024 --steps=30 --json="$OUT/train.jsonl" \
  2>&1 | grep -v Warning | tee "$OUT/train.log"
python3 benchmarks/benchmark_pipeline.py --num_workers=0,4,8,12 --seconds=6 \
  2>&1 | tee "$OUT/pipeline.log"
