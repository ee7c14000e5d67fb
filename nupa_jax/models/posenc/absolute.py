"""Learned absolute position embeddings (GPT-2 style), optionally with randomized positions.

`random_positions` (Ruoss et al. 2023): at training time each sample's positions are a
sorted random subset of [0, random_positions), so the table's far rows are trained on short
samples; evaluation uses 0, 1, 2, .... The table covers max(max_len, random_positions) rows.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nupa_jax.models.layers import param
from nupa_jax.models.posenc import base, sampling
from nupa_jax.models.presets import ModelConfig


@base.register("absolute")
class Absolute(sampling.RandomizedPositions, base.PositionalEncoding):
  """x + table[position]; positions past the table are clipped to its last row."""

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs, max_len: int | None = None,
               random_positions: int | None = None):
    rows = max(max_len or config.max_len, random_positions or 0)
    self.rows = rows
    self.random_positions = random_positions
    self.table = param(rngs, nnx.initializers.normal(config.init_std), (rows, config.hidden),
                       (None, "embed"), config.param_dtype)

  def limits(self) -> dict[str, tuple[int, str]]:
    return super().limits() or {"positions": (self.rows - 1, "max_len")}

  def embed(self, x: jax.Array, features: base.Features) -> jax.Array:
    rows = jnp.take(self.table[...], features.positions, axis=0, mode="clip")
    return x + rows.astype(x.dtype)
