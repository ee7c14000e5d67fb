"""A training run read back from its workdir: its config and a checkpoint, evaluated.

`load_run_config` reads the `config.json` the trainer saved, with the fields of older runs
mapped to today's names (`settings.upgrade`), so a workdir of any age evaluates as it was run.
`evaluate_checkpoint` rebuilds the run's encoder and model through its run mode
(`runmode.resolve`; `plugins` registers every mode), restores a checkpoint and scores it.
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
  config = load_run_config(workdir)
  if greedy is not None:
    config.eval.greedy = greedy
  if positions is not None:
    config.eval.positions = positions
  try:
    mesh = sharding_lib.make_mesh(config.mesh.shape)
  except ValueError:
    mesh = sharding_lib.make_mesh({"data": -1})
  mode = runmode.resolve(config)
  encoder = mode.text.encoder(config)
  spec = mode.model.state_spec(config, encoder.vocab_size, mesh, seed=config.seed)
  # The evaluator first: its settings' errors come before the checkpoint's restore.
  evaluator = evaluator_lib.Evaluator(config, encoder, mesh, spec.feature_names, tasks=tasks,
                                      per_length=per_length)
  ckpt = checkpoint_lib.Checkpointer(workdir, read_only=True)
  step = ckpt.resolve(checkpoint)
  params, meta = ckpt.restore_params(step, spec.abstract, spec.shardings)
  ckpt.close()
  answers = [] if predictions else None
  results = evaluator.evaluate(spec.graphdef, params,
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
