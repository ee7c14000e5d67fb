"""Throughput of the on-the-fly data pipeline: samples/s and tokens/s per worker count.

    python benchmarks/benchmark_pipeline.py --tasks=add_int --num_workers=0,1,2
    python benchmarks/benchmark_pipeline.py --tasks=all --batch_size=256 --device
    python benchmarks/benchmark_pipeline.py \
        --config=configs/rfcot.py:tasks=rfft,tokenizer=digits,context=4096 --num_workers=0,4

For each worker count it builds the pipeline of the paper's setting (tasks, 1-8 digits, batch
256, packed rows), or with `--config` the one the trainer builds for that recipe (its text
mode's encoder and data fields: RF-CoT traces, the generalist's mix; the data flags above are
then not used), reports how long its first batch took (worker start-up: grain pickles the
source for each worker), skips the first batches, consumes batches for `--seconds` and reports
the rate over the second half of that time, when the batches the workers prefetched during
start-up are used up and only the steady rate remains.
`--device` also turns every batch into a global jax.Array on all local devices, as the trainer
does. Compare samples/s with the train step's (benchmarks of the trainer) on the same machine.
"""
import time

from absl import app
from absl import flags
import ml_collections
from ml_collections import config_flags

from nupa_jax import data
from nupa_jax import plugins  # noqa: F401  (registers the run modes a --config may use)
from nupa_jax import sharding

_TASKS = flags.DEFINE_string("tasks", "add_int", "comma-separated task[:weight], or 'all'")
_DIGITS = flags.DEFINE_string("train_digits", "1,8", "lo,hi digit lengths")
_BATCH = flags.DEFINE_integer("batch_size", 256, "samples per global batch")
_PACKING = flags.DEFINE_enum("packing", "packed", ["packed", "padded"], "row layout")
_PER_ROW = flags.DEFINE_integer("samples_per_row", 16, "samples a packed row holds")
_SEQ_LEN = flags.DEFINE_integer("seq_len", 0, "row length; 0 = auto")
_WORKERS = flags.DEFINE_list("num_workers", ["0", "1", "2"], "grain worker counts to time")
_SECONDS = flags.DEFINE_float("seconds", 10.0, "consumption time per worker count")
_WARMUP = flags.DEFINE_integer("warmup", 2, "untimed batches first (worker start-up)",
                                lower_bound=1)
_DEVICE = flags.DEFINE_bool("device", False, "make global jax.Arrays on all local devices")
_CONFIG = config_flags.DEFINE_config_file(
    "config", None, "a recipe (configs/FAMILY.py[:ARGS]) whose data to time instead of the flags "
    "above")


def _config() -> ml_collections.ConfigDict:
  config = ml_collections.ConfigDict({"data": data.defaults(),
                                      "train": {"batch_size": _BATCH.value}})
  weights = {}
  for item in _TASKS.value.split(","):
    name, _, weight = item.partition(":")
    weights[name] = float(weight or 1.0)
  config.data.tasks = weights
  config.data.train_digits = tuple(int(d) for d in _DIGITS.value.split(","))
  config.data.packing = _PACKING.value
  config.data.samples_per_row = _PER_ROW.value
  config.data.seq_len = _SEQ_LEN.value
  return config


def _pipeline() -> data.Pipeline:
  """The flags' pipeline, or the one the trainer builds for `--config`."""
  if _CONFIG.value is None:
    return data.Pipeline(_config())
  return data.Pipeline(*data.run_config(_CONFIG.value))


def main(argv):
  del argv
  start = time.perf_counter()
  pipeline = _pipeline()
  print(f"pipeline built in {time.perf_counter() - start:.1f} s: {dict(data.describe(pipeline))}")
  mesh = sharding.make_mesh({"data": -1}) if _DEVICE.value else None
  for workers in map(int, _WORKERS.value):
    start = time.perf_counter()
    with pipeline.train_iterator(mesh, num_workers=workers, process_index=0,
                                 process_count=1) as run:
      next(run)
      first_batch = time.perf_counter() - start
      for _ in range(_WARMUP.value - 1):
        next(run)
      start = time.perf_counter()
      marks = []  # (seconds since start, stats) after each batch
      while len(marks) < 3 or marks[-1][0] < _SECONDS.value:
        batch = next(run)
        if mesh is not None:
          batch["inputs"].block_until_ready()
        marks.append((time.perf_counter() - start, run.stats()))
    half = min(next(i for i, (t, _) in enumerate(marks) if t >= marks[-1][0] / 2),
               len(marks) - 2)
    (t0, before), (t1, after) = marks[half], marks[-1]
    seconds, count = t1 - t0, len(marks) - 1 - half
    samples = after["samples"] - before["samples"]
    tokens = after["tokens"] - before["tokens"]
    positions = after["positions"] - before["positions"]
    print(f"workers={workers}: {samples / seconds:,.0f} samples/s, {tokens / seconds:,.0f} "
          f"tokens/s ({positions / seconds:,.0f} positions/s incl. padding), padding "
          f"{1 - tokens / positions:.3f}, {seconds / count * 1e3:.1f} ms/batch over {count} "
          f"batches; first batch after {first_batch:.1f} s")

if __name__ == "__main__":
  app.run(main)
