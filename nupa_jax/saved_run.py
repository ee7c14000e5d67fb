"""A training run read back from its workdir: its config and a checkpoint, evaluated.

`load_run_config` reads the `config.json` the trainer saved, with the fields of older runs
mapped to today's names (`settings.upgrade`), so a workdir of any age evaluates as it was run.
`evaluate_checkpoint` rebuilds the run's encoder and model through its run mode
(`runmode.resolve`; `plugins` registers every mode), restores a checkpoint and scores it;
`evaluate_checkpoint_at` scores one restored checkpoint at several position rules.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence

import jax
import ml_collections

from nupa_jax import checkpoint as checkpoint_lib
from nupa_jax import paths
from nupa_jax import plugins  # pylint: disable=unused-import  (registers every run mode)
from nupa_jax import runmode
from nupa_jax import settings
from nupa_jax import sharding as sharding_lib
from nupa_jax.evaluation import evaluator as evaluator_lib
from nupa_jax.evaluation import results as results_lib
from nupa_jax.evaluation import settings as eval_settings
from nupa_jax.training import trainer


def load_run_config(workdir: str | os.PathLike) -> ml_collections.ConfigDict:
  """The ConfigDict a run saved as `config.json`, legacy fields upgraded."""
  path = paths.path(workdir) / trainer.CONFIG_FILE
  if not path.exists():
    raise FileNotFoundError(f"{path} not found: is {workdir} a training workdir?")
  return settings.upgrade(ml_collections.ConfigDict(json.loads(path.read_text())))


def evaluate_checkpoint(workdir: str | os.PathLike, checkpoint: str = "best",
                        tasks: Sequence[str] | None = None,
                        per_length: int | None = None, greedy: bool | None = None,
                        out: str | os.PathLike | None = None,
                        positions: str | None = None,
                        predictions: bool = False) -> tuple[int, dict, paths.Path]:
  """Evaluates checkpoint `best` / `latest` / STEP of a run; returns (step, results, file).

  The results go to `out`, or to `eval/evaluations/` under `results.evaluation_name` -- never
  over the trainer's `eval/step_N.json` / `eval/latest.json`. The run's config decides the
  model, text format and evaluation settings; `tasks`, `per_length`, `greedy` (greedy
  decoding, or the config's sampling) and `positions` (`evaluation.positions.RULES`) override
  `config.eval`. The mesh is the run's when it fits these devices,
  else all devices data-parallel (a checkpoint restores onto any mesh). `predictions` also
  writes every answer beside the results (`results.predictions_path`).
  """
  (evaluated,) = evaluate_checkpoint_at(workdir, [positions], checkpoint, tasks, per_length,
                                        greedy=greedy, out=out, predictions=predictions)
  return evaluated


def evaluate_checkpoint_at(workdir: str | os.PathLike, positions: Sequence[str | None],
                           checkpoint: str = "best", tasks: Sequence[str] | None = None,
                           per_length: int | None = None, *, greedy: bool | None = None,
                           out: str | os.PathLike | None = None,
                           predictions: bool = False) -> list[tuple[int, dict, paths.Path]]:
  """`evaluate_checkpoint` at each position rule of `positions` (None: the run's own), in
  that order: the files separate calls would write, for one start-up and one restore.

  Each rule's settings are checked before the checkpoint is restored. `out` names the file of
  a single rule; a rule asked twice (None and the run's own rule are one) is refused, as both
  would write one file. The rules share one encoding of the test set (`Evaluator.at_positions`).
  """
  if isinstance(positions, str):  # a bare rule would be read letter by letter
    raise TypeError(f"positions={positions!r}: give a sequence of rules, e.g. [{positions!r}]")
  if not positions:
    raise ValueError("no position rules to evaluate at")
  if out and len(positions) > 1:
    raise ValueError(f"one results file (out={str(out)!r}) cannot hold {len(positions)} "
                     "position rules: leave `out` unset to give each its own file")
  config = load_run_config(workdir)
  if greedy is not None:
    config.eval.greedy = greedy
  own = eval_settings.Eval.from_config(config).positions if None in positions else None
  rules = [rule or own for rule in positions]
  repeated = sorted({rule for rule in rules if rules.count(rule) > 1})
  if repeated:
    note = f" (the run's own rule is {own!r})" if own else ""
    raise ValueError(f"position rule {', '.join(map(repr, repeated))} asked twice{note}")
  config.eval.positions = rules[0]
  try:
    mesh = sharding_lib.make_mesh(config.mesh.shape)
  except ValueError:
    mesh = sharding_lib.make_mesh({"data": -1})
  mode = runmode.resolve(config)
  encoder = mode.text.encoder(config)
  spec = mode.model.state_spec(config, encoder.vocab_size, mesh, seed=config.seed)
  # The evaluators first: their settings' errors come before the checkpoint's restore.
  first = evaluator_lib.Evaluator(config, encoder, mesh, spec.feature_names, tasks=tasks,
                                  per_length=per_length)
  evaluators = [first, *(first.at_positions(rule) for rule in rules[1:])]
  ckpt = checkpoint_lib.Checkpointer(workdir, read_only=True)
  step = ckpt.resolve(checkpoint)
  params, meta = ckpt.restore_params(step, spec.abstract, spec.shardings)
  ckpt.close()
  return [_evaluate_and_write(evaluator, spec.graphdef, params, workdir, step, meta, checkpoint,
                              tasks, out, predictions) for evaluator in evaluators]


def _evaluate_and_write(evaluator: evaluator_lib.Evaluator, graphdef, params,
                        workdir: str | os.PathLike, step: int, meta: dict, checkpoint: str,
                        tasks: Sequence[str] | None, out: str | os.PathLike | None,
                        predictions: bool) -> tuple[int, dict, paths.Path]:
  """Scores the restored `params` with `evaluator`; writes its results (and answers)."""
  answers = [] if predictions else None
  results = evaluator.evaluate(graphdef, params,
                               report=print if jax.process_index() == 0 else None,
                               predictions=answers)
  greedy, positions = evaluator.settings.greedy, evaluator.settings.positions
  out = paths.path(out) if out else (
      paths.path(workdir) / results_lib.EVAL_DIR / "evaluations" /
      results_lib.evaluation_name(step, greedy, evaluator.per_length, tasks, positions))
  if jax.process_index() == 0:
    results_lib.write_evaluation(out, step, results,
                                 {"samples_seen": meta.get("samples_seen"),
                                  "checkpoint": checkpoint, "per_length": evaluator.per_length,
                                  "greedy": greedy, "positions": positions,
                                  **results_lib.skipped_meta(evaluator.skipped)})
  if predictions:
    results_lib.write_predictions(
        results_lib.predictions_path(out, jax.process_index(), jax.process_count()), answers)
  return step, results, out
