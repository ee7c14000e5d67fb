"""Rotary position embedding (Su et al. 2021), Llama-3.1 style.

Rotates each query/key pair of dimensions (i, i + D/2) by position * theta^(-2i/D) — the
rotate-half layout of Hugging Face Llama, so imported Llama weights work unchanged. Options:
`theta` (Llama-3.1: 500000), `scaling` (for imported checkpoints: `{"rope_type": "llama3",
factor, low_freq_factor, high_freq_factor, original_max_position_embeddings}` as Llama-3.1, the
default type, or `{"rope_type": "linear", factor}`) and
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


def _llama3(inv: np.ndarray, factor: float, low_freq_factor: float = 1.0,
            high_freq_factor: float = 4.0,
            original_max_position_embeddings: int = 8192) -> np.ndarray:
  """Llama-3.1: long wavelengths slowed by `factor`, short ones kept, the band between
  interpolated."""
  wavelen = 2 * math.pi / inv
  smooth = np.clip((original_max_position_embeddings / wavelen - low_freq_factor)
                   / (high_freq_factor - low_freq_factor), 0.0, 1.0)
  return (1 - smooth) * inv / factor + smooth * inv


def _linear(inv: np.ndarray, factor: float) -> np.ndarray:
  """Position interpolation (Chen et al. 2023): every frequency slowed by `factor`."""
  return inv / factor


# `scaling["rope_type"]` (Hugging Face's names) -> frequency transform; absent means llama3.
SCALINGS = {"llama3": _llama3, "linear": _linear}


def inverse_frequencies(head_dim: int, theta: float,
                        scaling: dict[str, Any] | None = None) -> np.ndarray:
  """float32[head_dim / 2] rotation speeds, optionally scaled (`SCALINGS`)."""
  inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
  if scaling:
    options = dict(scaling)
    kind = options.pop("rope_type", "llama3")
    if kind not in SCALINGS:
      raise ValueError(f"unknown RoPE scaling {kind!r}; known: {', '.join(SCALINGS)}")
    try:
      inv = SCALINGS[kind](inv, **options)
    except TypeError as e:
      raise ValueError(f"RoPE scaling {kind!r}: {e}") from None
  return inv.astype(np.float32)


@base.register("rope")
class RoPE(sampling.RandomizedPositions, base.PositionalEncoding):
  """Relative position through rotation of queries and keys."""

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs, theta: float = 500000.0,
               scaling: dict[str, Any] | None = None, random_positions: int | None = None):
    del rngs
    self.head_dim, self.theta = config.head_dim, float(theta)
    inverse_frequencies(self.head_dim, self.theta, scaling)  # a bad `scaling` fails here
    self.scaling = freeze(scaling)
    self.random_positions = random_positions

  def rotary(self, positions: jax.Array) -> tuple[jax.Array, jax.Array]:
    inv = jnp.asarray(inverse_frequencies(self.head_dim, self.theta, thaw(self.scaling)))
    angles = positions.astype(jnp.float32)[..., None] * inv
    angles = jnp.concatenate([angles, angles], axis=-1)
    return jnp.cos(angles), jnp.sin(angles)
