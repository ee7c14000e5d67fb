"""Rotary position embedding (Su et al. 2021), Llama-3.1 style.

Rotates each query/key pair of dimensions (i, i + D/2) by position * theta^(-2i/D) — the
rotate-half layout of Hugging Face Llama, so imported Llama weights work unchanged. Options:
`theta` (Llama-3.1: 500000), `scaling` (Llama-3.1's "llama3" frequency scaling, for imported
checkpoints: factor, low_freq_factor, high_freq_factor, original_max_position_embeddings) and
`random_positions` (Ruoss et al. 2023: at training time each sample's positions are a sorted
random subset of [0, random_positions); evaluation uses 0, 1, 2, ...).
"""
from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nupa_jax.models.posenc import base, sampling
from nupa_jax.models.presets import ModelConfig, freeze, thaw


def inverse_frequencies(head_dim: int, theta: float,
                        scaling: dict[str, Any] | None = None) -> np.ndarray:
  """float32[head_dim / 2] rotation speeds, optionally with Llama-3.1's frequency scaling."""
  inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
  if scaling:
    factor = scaling["factor"]
    low, high = scaling.get("low_freq_factor", 1.0), scaling.get("high_freq_factor", 4.0)
    context = scaling.get("original_max_position_embeddings", 8192)
    wavelen = 2 * math.pi / inv
    # Long wavelengths are slowed by `factor`, short ones kept, the band between interpolated.
    smooth = np.clip((context / wavelen - low) / (high - low), 0.0, 1.0)
    inv = (1 - smooth) * inv / factor + smooth * inv
  return inv.astype(np.float32)


@base.register("rope")
class RoPE(sampling.RandomizedPositions, base.PositionalEncoding):
  """Relative position through rotation of queries and keys."""

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs, theta: float = 500000.0,
               scaling: dict[str, Any] | None = None, random_positions: int | None = None):
    del rngs
    self.head_dim, self.theta = config.head_dim, float(theta)
    self.scaling = freeze(scaling)
    self.random_positions = random_positions

  def rotary(self, positions: jax.Array) -> tuple[jax.Array, jax.Array]:
    inv = jnp.asarray(inverse_frequencies(self.head_dim, self.theta, thaw(self.scaling)))
    angles = positions.astype(jnp.float32)[..., None] * inv
    angles = jnp.concatenate([angles, angles], axis=-1)
    return jnp.cos(angles), jnp.sin(angles)
