"""Abacus embeddings (McLeish et al. 2024): a learned embedding of each digit's index within its
number, added to the token embedding.

`digit_index` comes from the text layer (`Encoder.positions`: 1-based index of a number token
within its number, 0 for other tokens). At training time every sample's digit indices are
shifted by one random offset in [0, max_offset] (the paper's k = 100), so the rows for long
numbers are trained on short ones; non-digit tokens keep index 0. Abacus adds no other
position signal: the rest of the model is NoPE, the paper's main setting.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from nupa_jax.models.layers import param
from nupa_jax.models.posenc import base, sampling
from nupa_jax.models.presets import ModelConfig


@base.register("abacus")
class Abacus(base.PositionalEncoding):
  """x + table[digit_index (+ offset)]; indices past the table are clipped to its last row."""
  inputs = frozenset({"digit_index"})

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs, max_digits: int = 128,
               max_offset: int = 100):
    self.max_offset = max_offset
    self.table = param(rngs, nnx.initializers.normal(config.init_std),
                       (max_digits + max_offset + 1, config.hidden), (None, "embed"),
                       config.param_dtype)

  @property
  def needs_rng(self) -> bool:
    return self.max_offset > 0

  def prepare(self, features, *, rng, deterministic):
    if deterministic or not self.max_offset:
      return features
    offset = sampling.segment_offsets(rng, features.segment_ids, self.max_offset)
    index = features.digit_index
    return features._replace(digit_index=jnp.where(index > 0, index + offset, 0))

  def embed(self, x: jax.Array, features: base.Features) -> jax.Array:
    rows = jnp.take(self.table[...], features.digit_index, axis=0, mode="clip")
    return x + rows.astype(x.dtype)
