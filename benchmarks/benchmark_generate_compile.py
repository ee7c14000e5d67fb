"""Compile time of the evaluator's generation program (KV-cache decoding) for one model config.

    python benchmarks/benchmark_generate_compile.py --config=configs/beyond.py:pe=fire \
        --batch=1024 --prompt_len=224 --max_new_tokens=110
    XLA_FLAGS=--xla_gpu_autotune_level=0 python benchmarks/benchmark_generate_compile.py ...

Why: FIRE's evaluation at 100-digit lengths spent minutes in XLA compilation on H100s while
the same program compiles in seconds on CPU (docs/results/beyond/README.md), and a sweep's
10-minute command cannot afford that. This times `generate` twice on prompts of one shape:
the first call traces, compiles and runs, the second only runs, so their difference is the
compile time. Run it under different `XLA_FLAGS`, PEs or shapes to find what makes a program
slow to compile before spending a training run on it. Prompts are all-pad tokens (the compile
does not depend on their values); PEs that read text features (Abacus, coupled positions) are
refused, since their prompts need the text layer's per-token features.
"""
import time

from absl import app
from absl import flags
from flax import nnx
import jax
import numpy as np
from ml_collections import config_flags

from nupa_jax import models
from nupa_jax.evaluation import generate

_CONFIG = config_flags.DEFINE_config_file("config", None, "a config family file[:ARGS]")
_BATCH = flags.DEFINE_integer("batch", 1024, "prompts per call (the evaluator's eval.batch_size)")
_PROMPT_LEN = flags.DEFINE_integer("prompt_len", 224, "tokens per prompt")
_MAX_NEW = flags.DEFINE_integer("max_new_tokens", 110, "tokens generated per prompt")
_VOCAB = flags.DEFINE_integer("vocab_size", 16, "vocabulary size of the model built")


def _timed_call(model, prompts, lengths) -> float:
  start = time.perf_counter()
  out = generate.generate(model, prompts, lengths, max_new_tokens=_MAX_NEW.value, eos_id=1,
                          pad_id=0)
  jax.block_until_ready(out)
  return time.perf_counter() - start


def main(argv):
  del argv
  config = _CONFIG.value
  if config is None:
    raise app.UsageError("--config=configs/FAMILY.py[:ARGS] is required")
  model = models.build(config.model, _VOCAB.value, rngs=nnx.Rngs(0))
  if model.posenc.inputs:
    raise app.UsageError(f"posenc {model.posenc.name!r} reads {sorted(model.posenc.inputs)} "
                         "per token; this benchmark times PEs that read positions only")
  prompts = np.zeros((_BATCH.value, _PROMPT_LEN.value), np.int32)
  lengths = np.full((_BATCH.value,), _PROMPT_LEN.value, np.int32)
  print(f"{jax.devices()[0].device_kind}: posenc {model.posenc.name}, batch {_BATCH.value}, "
        f"prompts of {_PROMPT_LEN.value} tokens, {_MAX_NEW.value} new tokens", flush=True)
  first = _timed_call(model, prompts, lengths)
  second = _timed_call(model, prompts, lengths)
  print(f"first call (trace + compile + run) {first:.1f} s, second (run) {second:.1f} s, "
        f"compile ~{first - second:.1f} s")


if __name__ == "__main__":
  app.run(main)
