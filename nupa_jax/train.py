"""`python -m nupa_jax.train --config=configs/FAMILY.py[:ARGS] --workdir=DIR [--config.a.b=v]`

Trains a model as the config says, evaluating and checkpointing as it goes; rerunning the
same command in the same workdir resumes. A command line or config that cannot run (a config
field that does not exist, an unknown name, a workdir that is a file; a batch holding a sample
longer than `config.model.attention_span`) exits with status 2 and one line naming the fix
(`nupa_jax.cli`); a diverged run (NaN / inf loss) exits with status 3,
a run whose data holds a question that cannot be made (a task's sampler or solver, or the
encoder, failed on it; or the frozen test set holds every question of a trained cell) with
status 4 and one line naming it (`nupa_jax.data.SampleError`).
SIGTERM / SIGINT (or a preemption notice) stop the run at a step every process agrees on,
with a checkpoint there: one line, exit status 143 / 130, and rerunning the command resumes
(docs/faults.md). Grain workers that die as they start (nupa_jax.data.workers) end the run with
one line, status 1, below the workers' own errors.
"""
import sys

from absl import app
from absl import flags
from absl import logging
from ml_collections import config_flags

from nupa_jax import cli
from nupa_jax import data
from nupa_jax import distributed
from nupa_jax.training import stopping
from nupa_jax.training import trainer

_CONFIG = config_flags.DEFINE_config_file(
    "config", None, "experiment config: configs/FAMILY.py[:key=value,...]", lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "run directory: checkpoints, logs, evaluations")
flags.mark_flags_as_required(["config", "workdir"])
distributed.define_flags()


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  if not flags.FLAGS["verbosity"].present:  # orbax logs every save step by step at INFO
    logging.set_verbosity(logging.WARNING)
  with cli.usage_errors():
    cli.output_dir(_WORKDIR.value, "--workdir")
  distributed.initialize_from_flags()  # several processes (SLURM, TPU pod, launch/local.sh)
  try:
    with cli.usage_errors(trainer.ConfigError, data.LongSampleError, label="config error"):
      trainer.train_and_evaluate(_CONFIG.value, _WORKDIR.value)
    distributed.shutdown()  # leave the other processes in order (no-op for one process)
  except stopping.Stopped as e:
    if distributed.is_main_process():
      print(e, file=sys.stderr, flush=True)
    distributed.shutdown()
    sys.exit(e.exit_status)
  except trainer.DivergedError as e:
    print(f"training diverged: {e}", file=sys.stderr)
    sys.exit(cli.DIVERGED)
  except data.SampleError as e:
    print(f"training data error: {e}", file=sys.stderr)
    sys.exit(cli.DATA_ERROR)
  except data.WorkersDied as e:
    data.exit_for_dead_workers(e)


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
