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

from nupa_jax.models.posenc import base, indexed
from nupa_jax.models.presets import ModelConfig


@base.register("abacus")
class Abacus(indexed.IndexedEmbedding):
  """x + table[digit_index (+ offset on digits)]."""
  feature = "digit_index"
  limit_option = "max_digits"

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs, max_digits: int = 128,
               max_offset: int = 100):
    super().__init__(config, rngs=rngs, max_index=max_digits, max_offset=max_offset)

  def shift(self, index: jax.Array, offset: jax.Array) -> jax.Array:
    return jnp.where(index > 0, index + offset, 0)
