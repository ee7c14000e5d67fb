"""Position coupling (Cho et al. 2024): digits of equal significance share a position id.

The ids are the text layer's `significance` (`Encoder.positions`: the power of ten a token
carries, equal for aligned digits of operands and answer), fed to a learned absolute
embedding. At training time each sample's ids are shifted by one random offset in
[0, max_offset] (the paper's random starting id), so rows for long numbers get trained.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nupa_jax.models.layers import param
from nupa_jax.models.posenc import base, sampling
from nupa_jax.models.presets import ModelConfig


@base.register("coupled")
class Coupled(base.PositionalEncoding):
  """x + table[significance (+ offset)]; ids past the table are clipped to its last row."""
  inputs = frozenset({"significance"})

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs, max_significance: int = 128,
               max_offset: int = 64):
    self.max_offset = max_offset
    self.table = param(rngs, nnx.initializers.normal(config.init_std),
                       (max_significance + max_offset + 1, config.hidden), (None, "embed"),
                       config.param_dtype)

  @property
  def needs_rng(self) -> bool:
    return self.max_offset > 0

  def prepare(self, features, *, rng, deterministic):
    if deterministic or not self.max_offset:
      return features
    offset = sampling.segment_offsets(rng, features.segment_ids, self.max_offset)
    return features._replace(significance=features.significance + offset)

  def embed(self, x: jax.Array, features: base.Features) -> jax.Array:
    rows = jnp.take(self.table[...], jnp.maximum(features.significance, 0), axis=0,
                    mode="clip")
    return x + rows.astype(x.dtype)
