"""`python -m nupa_jax.evaluate --workdir=DIR [--checkpoint best|latest|STEP] [--tasks a,b]
[--per-length N]`

Evaluates a saved checkpoint of a training run on the frozen NUPA test set and writes
`DIR/eval/step_{N}.json` and `DIR/eval/latest.json` (the trainer's layout), then prints the
S/M/L/XL table.
"""
from absl import app
from absl import flags
from absl import logging

from nupa_jax import cli
from nupa_jax import distributed
from nupa_jax.evaluation import evaluator

_WORKDIR = flags.DEFINE_string("workdir", None, "a training run's directory")
_CHECKPOINT = flags.DEFINE_string("checkpoint", "best",
                                  "best (lowest validation loss), latest, or a step number")
_TASKS = flags.DEFINE_list("tasks", None, "tasks to evaluate (default: the run's config.eval)")
_PER_LENGTH = flags.DEFINE_integer("per-length", None,
                                   "questions per task and digit length (default: the run's)")
flags.mark_flag_as_required("workdir")
distributed.define_flags()


def main(argv):
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {' '.join(argv[1:])}")
  if not flags.FLAGS["verbosity"].present:
    logging.set_verbosity(logging.WARNING)
  distributed.initialize_from_flags()
  if _CHECKPOINT.value not in ("best", "latest") and not _CHECKPOINT.value.isdigit():
    cli.fail(f"--checkpoint={_CHECKPOINT.value!r}: expected best, latest or a step")
  with cli.usage_errors(ValueError, *cli.PATH_ERRORS):
    step, results = evaluator.evaluate_checkpoint(_WORKDIR.value, _CHECKPOINT.value,
                                                  _TASKS.value, _PER_LENGTH.value)
  print(f"checkpoint step {step} of {_WORKDIR.value}:")
  print(evaluator.format_table(results))


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
