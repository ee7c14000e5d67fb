"""Shared machinery of Abacus and position coupling: a learned embedding indexed by a per-token
feature from the text layer, shifted by one random offset per sample at training time."""
from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
from flax import nnx

from nupa_jax.models.layers import param
from nupa_jax.models.posenc import base, sampling
from nupa_jax.models.presets import ModelConfig


class IndexedEmbedding(base.PositionalEncoding):
  """x + table[feature (+ offset)]; indices past the table are clipped to its last row.

  The table has max_index + max_offset + 1 rows: evaluation (no offset) may use indices up
  to max_index (`limits`), training shifts them by up to max_offset.
  """
  feature: ClassVar[str]
  limit_option: ClassVar[str]  # the subclass's name for max_index

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs, max_index: int, max_offset: int):
    self.max_index = max_index
    self.max_offset = max_offset
    self.table = param(rngs, nnx.initializers.normal(config.init_std),
                       (max_index + max_offset + 1, config.hidden), (None, "embed"),
                       config.param_dtype)

  @property
  def inputs(self) -> frozenset[str]:
    return frozenset({self.feature})

  @property
  def needs_rng(self) -> bool:
    return self.max_offset > 0

  def limits(self) -> dict[str, tuple[int, str]]:
    return {self.feature: (self.max_index, self.limit_option)}

  def shift(self, index: jax.Array, offset: jax.Array) -> jax.Array:
    return index + offset

  def prepare(self, features, *, rng, deterministic):
    if deterministic or not self.max_offset:
      return features
    offset = sampling.segment_offsets(rng, features.segment_ids, self.max_offset)
    shifted = self.shift(getattr(features, self.feature), offset)
    return features._replace(**{self.feature: shifted})

  def embed(self, x: jax.Array, features: base.Features) -> jax.Array:
    index = jnp.maximum(getattr(features, self.feature), 0)
    return x + jnp.take(self.table[...], index, axis=0, mode="clip").astype(x.dtype)
