"""Orbax checkpoints of a run: model + optimizer state, step, data position, validation loss.

Layout: `WORKDIR/checkpoints/{step}/` with two items, `state` (the nnx state as a pure dict of
sharded arrays, restored straight onto the mesh) and `meta` (JSON: step, samples seen, the
data pipeline's integer position). Saves are asynchronous; a run killed mid-save leaves a
temporary directory that orbax ignores (and removes on the next start), so the newest
*committed* step is always a consistent restart point. Kept: the latest `keep` steps plus the
one with the lowest validation loss (saved with metrics at evaluation steps).
"""
from __future__ import annotations

import logging
import os
from typing import Any

import jax
import orbax.checkpoint as ocp
from flax import nnx
from orbax.checkpoint import checkpoint_managers

from nupa_jax import paths

CHECKPOINT_DIR = "checkpoints"
BEST_METRIC = "val_loss"


def _best_metric(metrics) -> float:
  return metrics[BEST_METRIC]


class _QuietUntrackedSaves(logging.Filter):
  """Periodic saves carry no validation loss by design; orbax warns about each of them."""

  def filter(self, record: logging.LogRecord) -> bool:
    return "did not provide metrics" not in record.getMessage()


logging.getLogger("absl").addFilter(_QuietUntrackedSaves())


class Checkpointer:
  """A CheckpointManager over `WORKDIR/checkpoints` keeping latest-k and best."""

  def __init__(self, workdir: str | os.PathLike, *, keep: int = 2, keep_best: bool = True,
               async_save: bool = True, read_only: bool = False):
    policies = [checkpoint_managers.LatestN(n=keep)]
    if keep_best:
      policies.append(checkpoint_managers.BestN(
          get_metric_fn=_best_metric, reverse=True, n=1,
          keep_checkpoints_without_metrics=False))
    self.directory = paths.absolute(workdir) / CHECKPOINT_DIR
    # read_only: open another run's checkpoints without creating, cleaning or pruning.
    options = ocp.CheckpointManagerOptions(
        best_fn=_best_metric, best_mode="min",
        preservation_policy=checkpoint_managers.AnyPreservationPolicy(policies),
        enable_async_checkpointing=async_save, cleanup_tmp_directories=not read_only,
        create=not read_only)
    self._manager = ocp.CheckpointManager(self.directory, options=options)

  def save(self, step: int, state, meta: dict[str, Any],
           val_loss: float | None = None) -> None:
    """Starts an (async) save of `state` (an nnx.State) and the JSON-able `meta`."""
    args = ocp.args.Composite(state=ocp.args.StandardSave(nnx.to_pure_dict(state)),
                              meta=ocp.args.JsonSave(dict(meta, step=step)))
    metrics = None if val_loss is None else {BEST_METRIC: float(val_loss)}
    self._manager.save(step, args=args, metrics=metrics, force=True)

  def steps(self) -> list[int]:
    return list(self._manager.all_steps())

  def latest_step(self) -> int | None:
    return self._manager.latest_step()

  def best_step(self) -> int | None:
    """The step with the lowest validation loss (the latest if none carries one)."""
    with_metrics = [s for s in self.steps() if self._manager.metrics(s)]
    if not with_metrics:
      return self.latest_step()
    return self._manager.best_step()

  def resolve(self, which: str | int) -> int:
    """`best`, `latest` or a step number -> an existing step (clear error otherwise)."""
    steps = self.steps()
    if not steps:
      raise ValueError(f"no checkpoint in {self.directory}")
    if which == "best":
      return self.best_step()
    if which == "latest":
      return self.latest_step()
    step = int(which)
    if step not in steps:
      raise ValueError(f"no checkpoint for step {step} in {self.directory}; saved steps: "
                       f"{', '.join(map(str, steps))}")
    return step

  def restore(self, step: int, abstract_state, shardings) -> tuple[Any, dict[str, Any]]:
    """(state, meta) of `step`; the state is laid out on `shardings` (an nnx state of them).

    `abstract_state` is the nnx state of the model and optimizer built with
    `nnx.eval_shape`; the restored arrays replace its values.
    """
    target = jax.tree.map(
        lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
        nnx.to_pure_dict(abstract_state), nnx.to_pure_dict(shardings))
    restored = self._manager.restore(step, args=ocp.args.Composite(
        state=ocp.args.StandardRestore(target), meta=ocp.args.JsonRestore()))
    state = jax.tree.map(lambda x: x, abstract_state)  # a copy to fill in
    nnx.replace_by_pure_dict(state, restored["state"])
    return state, dict(restored["meta"])

  def restore_params(self, step: int, abstract_params, shardings) -> tuple[Any, dict[str, Any]]:
    """(model state, meta) of `step`: only the model's entry of a saved (model, optimizer)
    state, for evaluation and `config.init_from`."""
    target = {0: jax.tree.map(
        lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
        nnx.to_pure_dict(abstract_params), nnx.to_pure_dict(shardings))}
    restored = self._manager.restore(step, args=ocp.args.Composite(
        state=ocp.args.PyTreeRestore(
            target, restore_args=ocp.checkpoint_utils.construct_restore_args(target),
            partial_restore=True),
        meta=ocp.args.JsonRestore()))
    params = jax.tree.map(lambda x: x, abstract_params)
    nnx.replace_by_pure_dict(params, restored["state"][0])
    return params, dict(restored["meta"])

  def wait(self) -> None:
    self._manager.wait_until_finished()

  def close(self) -> None:
    self._manager.close()
