"""NoPE (Kazemnejad et al. 2023): no positional encoding at all.

Order reaches the model only through the causal mask, which the paper (Section 3.2) finds
generalises to longer numbers better than RoPE.
"""
from __future__ import annotations

from flax import nnx

from nupa_jax.models.posenc import base
from nupa_jax.models.presets import ModelConfig


@base.register("nope")
class NoPE(base.PositionalEncoding):
  """Implements no hook."""

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
    del config, rngs
