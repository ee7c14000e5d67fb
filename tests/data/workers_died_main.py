"""Run by test_data_workers.py in a fresh process: grain workers that die as they start.

    python workers_died_main.py WORKERS DEVICE_PREFETCH

A spawned grain worker imports the main module again (as `__mp_main__`) before it reads its
share of the pipeline; this script fails that import on purpose, as a main module that cannot
be imported in a fresh process does: each worker prints its traceback and exits with status 1.
Takes the first training batch of a pipeline of WORKERS workers on one CPU device, placed as
the trainer's are (DEVICE_PREFETCH batches ahead; 0: when asked), and prints one JSON line: the
size of the pickled batcher each worker is sent, and the error the batch raised; then, after
WorkersDied, ends as the train command does (`data.exit_for_dead_workers`).
"""
import json
import sys

if __name__ == "__mp_main__":
  raise ImportError("workers_died_main.py cannot be imported in a worker (on purpose)")

import pickle  # pylint: disable=g-import-not-at-top,wrong-import-position

import data_testing  # pylint: disable=g-import-not-at-top,wrong-import-position
from nupa_jax import data  # pylint: disable=g-import-not-at-top,wrong-import-position
from nupa_jax import sharding  # pylint: disable=g-import-not-at-top,wrong-import-position

pipeline = data.Pipeline(data_testing.config(num_workers=int(sys.argv[1]),
                                              device_prefetch=int(sys.argv[2])))
result = {"batcher_bytes": len(pickle.dumps(pipeline.batcher("train")))}
error = None
try:
  with pipeline.train_iterator(sharding.make_mesh({"data": 1})) as batches:
    next(batches)
except Exception as e:  # pylint: disable=broad-except  (reported to the test)
  error = e
  result["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(result), flush=True)
if isinstance(error, data.WorkersDied):
  data.exit_for_dead_workers(error)
