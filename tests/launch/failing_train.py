"""`python -m nupa_jax.train` whose process 1 raises when it reaches its first evaluation, run
by test_multiprocess_training.py through `launch/local.sh -m failing_train`: a failure in one
process of a job that is otherwise training normally (process 0 then waits for it in the
evaluation's collectives)."""
import os

from absl import app

from nupa_jax import train
from nupa_jax.training import trainer


def _fail(*args, **kwargs):
  raise RuntimeError("process 1 fails on purpose")


if os.environ.get("JAX_PROCESS_ID") == "1":
  trainer._evaluate = _fail  # pylint: disable=protected-access

if __name__ == "__main__":
  app.run(train.main)
