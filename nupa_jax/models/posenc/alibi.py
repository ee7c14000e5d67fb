"""ALiBi (Press et al. 2022): a linear distance penalty per head, no position embedding.

The bias added to attention logits is -slope_h * |q_pos - k_pos|, slopes geometric in the
heads: the published, negative penalty. The official NUPA code (GraphPKU/number_cookbook,
src/modify_pe.py, `_alibi_pe` with its default alibi_r = 1) adds +slope_h * |q_pos - k_pos|,
rewarding far tokens; the paper's ALiBi numbers come from that bias. `reward_distance=True`
reproduces it, so a comparison with the paper can use the PE the paper actually trained, with
that code's slopes too (`official_slopes`, which differ from the published ones only for a head
count that is not a power of two).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nupa_jax.models.posenc import base
from nupa_jax.models.presets import ModelConfig


def slopes(heads: int) -> np.ndarray:
  """The ALiBi paper's slopes: 2^(-8/n), 2^(-16/n), ... for n heads (n a power of two); for
  other n, the slopes of the next lower power of two followed by every other slope of twice
  that many heads."""
  def geometric(n: int) -> list[float]:
    return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]
  if heads & (heads - 1) == 0:
    return np.asarray(geometric(heads), np.float32)
  lower = 2 ** math.floor(math.log2(heads))
  extra = geometric(2 * lower)[0::2][:heads - lower]
  return np.asarray(geometric(lower) + extra, np.float32)


def official_slopes(heads: int) -> np.ndarray:
  """The official NUPA code's slopes: 2^(-8 (h + 1) / n) for every head count n."""
  return np.asarray([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)], np.float32)


@base.register("alibi")
class ALiBi(base.PositionalEncoding):
  """Fixed linear biases; no parameters."""

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs, reward_distance: bool = False):
    del rngs
    self.heads = config.heads
    self.sign = 1.0 if reward_distance else -1.0
    self.slopes = official_slopes if reward_distance else slopes

  def attention_bias(self, q_pos: jax.Array, k_pos: jax.Array) -> jax.Array:
    distance = jnp.abs(q_pos[:, :, None] - k_pos[:, None, :]).astype(jnp.float32)
    signed_slopes = self.sign * jnp.asarray(self.slopes(self.heads))
    return signed_slopes[None, :, None, None] * distance[:, None]
