"""`python -m nupa_jax.evaluate --workdir=DIR [--checkpoint best|latest|STEP] [--tasks a,b]
[--per-length N] [--decoding run|greedy|sampled]
[--positions RULE[,RULE...]] [--out FILE] [--predictions]`

Evaluates a saved checkpoint of a training run on the frozen NUPA test set, writes the results
(the trainer's JSON layout) to `--out` or to
`DIR/eval/evaluations/step_{N}_{decoding}_{P}q[_tasks][_{positions}-positions].json`
-- a name of its own, so it never replaces the trainer's `eval/step_N.json` / `latest.json` nor
an evaluation with other settings -- and prints the S/M/L/XL table. `--predictions` also writes
every question's answer and scores, one JSON line each, to `NAME.predictions.jsonl` beside it
(on several processes one file each, `NAME.predictions.process-K.jsonl`, every question in
exactly one of them). Several position rules (`run`, `consecutive`, `training`,
`training_longest`) score the checkpoint each way, one file each, restoring it once.
"""
import jax
from absl import app
from absl import flags
from absl import logging

from nupa_jax import cli
from nupa_jax import distributed
from nupa_jax import saved_run
from nupa_jax.evaluation import positions as positions_lib
from nupa_jax.evaluation import results as results_lib

_WORKDIR = flags.DEFINE_string("workdir", None, "a training run's directory")
_CHECKPOINT = flags.DEFINE_string("checkpoint", "best",
                                  "best (lowest validation loss), latest, or a step number")
_TASKS = flags.DEFINE_list("tasks", None, "tasks to evaluate (default: the run's config.eval)")
_PER_LENGTH = flags.DEFINE_integer("per-length", None,
                                   "questions per task and digit length (default: the run's)")
_DECODING = flags.DEFINE_enum("decoding", "run", ["run", "greedy", "sampled"],
                              "run: the run's config.eval.greedy; greedy; or sampled with the "
                              "config's temperature / top-p (the paper's 0.6 / 0.9)")
_POSITION_CHOICES = ("run", *positions_lib.RULES)
_POSITIONS = flags.DEFINE_list(
    "positions", ["run"],
    "position ids of the evaluated tokens, one rule or several comma-separated (each its own "
    "results file, the checkpoint restored once): run: the run's config.eval.positions; "
    "consecutive (0, 1, 2, ..., the paper's); training: drawn as the run's PE draws them in "
    "training (random_positions), to test whether a model fails only on consecutive ids; "
    "training_longest: the same for the longest answer of each question's length, so that the "
    "ids do not give away the answer's length")
_OUT = flags.DEFINE_string("out", None, "results file (default: under DIR/eval/evaluations/)")
_PREDICTIONS = flags.DEFINE_bool(
    "predictions", False, "also write each question's answer and scores beside the results "
    "(NAME.predictions.jsonl)")
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
  unknown = [rule for rule in _POSITIONS.value if rule not in _POSITION_CHOICES]
  if unknown or not _POSITIONS.value:
    cli.fail(f"--positions={','.join(_POSITIONS.value)}: expected one or more of "
             f"{', '.join(_POSITION_CHOICES)}, comma-separated")
  greedy = None if _DECODING.value == "run" else _DECODING.value == "greedy"
  with cli.usage_errors(ValueError, *cli.PATH_ERRORS):
    evaluated = saved_run.evaluate_checkpoint_at(
        _WORKDIR.value, [None if rule == "run" else rule for rule in _POSITIONS.value],
        _CHECKPOINT.value, _TASKS.value, _PER_LENGTH.value, greedy=greedy, out=_OUT.value,
        predictions=_PREDICTIONS.value)
  for step, results, path in evaluated:
    print(f"checkpoint step {step} of {_WORKDIR.value} (written to {path}):")
    if _PREDICTIONS.value:
      answers = results_lib.predictions_path(path, jax.process_index(), jax.process_count())
      print(f"answers: {answers}")
    print(results_lib.format_table(results))
  distributed.shutdown()  # leave the other processes in order (no-op for one process)


if __name__ == "__main__":
  app.run(main, flags_parser=cli.parse_flags)
