"""The optimizer and learning-rate schedule from `config.train`.

Paper A.4.1: AdamW (lr 5e-5, weight decay 0.01, Transformers' defaults otherwise: betas
0.9 / 0.999, eps 1e-8, gradient clipping at norm 1) with cosine decay. Schedules and
optimizers are registries keyed by the config string. Weight decay skips vectors (norm scales,
biases), as the Transformers trainer does.
"""
from __future__ import annotations

from collections.abc import Callable

import jax
import optax

from nupa_jax.models import transformer

Schedule = Callable[[jax.Array], jax.Array]

_SCHEDULES: dict[str, Callable[..., Schedule]] = {
    "cosine": lambda peak, steps, end: optax.cosine_decay_schedule(peak, steps, alpha=end),
    "linear": lambda peak, steps, end: optax.linear_schedule(peak, peak * end, steps),
    "constant": lambda peak, steps, end: optax.constant_schedule(peak),
}


def schedule(train_config) -> Schedule:
  """Linear warmup over `warmup_steps`, then `train_config.schedule` until `steps`."""
  name = train_config.schedule
  if name not in _SCHEDULES:
    raise ValueError(f"unknown learning-rate schedule {name!r}; known: "
                     f"{', '.join(sorted(_SCHEDULES))}")
  peak = train_config.learning_rate
  warmup = int(train_config.warmup_steps)
  decay = _SCHEDULES[name](peak, max(int(train_config.steps) - warmup, 1),
                           train_config.end_lr_ratio)
  if warmup <= 0:
    return decay
  return optax.join_schedules([optax.linear_schedule(0.0, peak, warmup), decay], [warmup])


def _decay_mask(params):
  """Weight decay on matrices only, as the Transformers trainer does: not on norm scales or
  biases. The blocks' parameters are stacked under `layers` with a leading layer axis, which
  makes neither a stack of norm scales nor a (heads, head_dim) bias a matrix. Computed from the
  parameter tree alone: optax calls it with bare arrays."""
  def is_matrix(path, leaf):
    keys = [k for k in (getattr(p, "key", getattr(p, "name", None)) for p in path)
            if isinstance(k, str) and k != "value"]
    stacked = bool(keys) and keys[0] == transformer.STACKED_BLOCKS
    return getattr(leaf, "ndim", 0) - stacked >= 2 and keys[-1:] != ["bias"]
  return jax.tree_util.tree_map_with_path(is_matrix, params)


def _adamw(train_config, lr: Schedule) -> optax.GradientTransformation:
  return optax.adamw(lr, b1=train_config.b1, b2=train_config.b2, eps=train_config.eps,
                     weight_decay=train_config.weight_decay, mask=_decay_mask,
                     mu_dtype=train_config.mu_dtype or None)


_OPTIMIZERS = {"adamw": _adamw}


def make(train_config) -> optax.GradientTransformation:
  """Gradient clipping (if `grad_clip` > 0) followed by the configured optimizer."""
  name = train_config.optimizer
  if name not in _OPTIMIZERS:
    raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(sorted(_OPTIMIZERS))}")
  tx = _OPTIMIZERS[name](train_config, schedule(train_config))
  if train_config.grad_clip > 0:
    tx = optax.chain(optax.clip_by_global_norm(train_config.grad_clip), tx)
  return tx
