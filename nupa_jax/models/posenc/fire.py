"""FIRE (Li et al. 2023): a learned function of log-normalised relative distance per head.

bias_h(i, j) = f_h(psi(i - j) / psi(max(L, i))) with psi(x) = log(c x + 1), f a one-hidden-
layer ReLU MLP (1 -> hidden -> heads), c > 0 and the threshold L learned. Dividing by the
query position makes distances relative to how far the sequence has come, which is what lets
FIRE extrapolate to longer inputs. One FIRE module is shared by all layers (like T5's relative
bias), so the bias is computed once per forward pass.

Initialisation is monotone: first-layer weights >= 0, output weights <= 0, so at step 0 every
head penalises distance more the farther a key is (an ALiBi-like start that training reshapes).
The bias is per sample (positions restart in packed rows) and has gradients, which cuDNN's
fused attention cannot give for batch > 1: FIRE needs attention_impl='xla'.

`random_positions` (off by default): at training time each sample's positions are a sorted
random subset of [0, random_positions) (Ruoss et al. 2023), the combination Zhou et al. 2024
("Transformers Can Achieve Length Generalization But Not Robustly") train FIRE with.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from flax import nnx

from nupa_jax.models.layers import param
from nupa_jax.models.posenc import base, sampling
from nupa_jax.models.presets import ModelConfig


def _inverse_softplus(y: float) -> float:
  return y + math.log(-math.expm1(-y))  # log(exp(y) - 1) without overflow


@base.register("fire")
class FIRE(sampling.RandomizedPositions, base.PositionalEncoding):
  """Functional interpolation for relative positions."""
  learned_bias = True

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs, hidden: int = 32,
               init_c: float = 0.1, init_threshold: float = 512.0,
               random_positions: int | None = None):
    self.random_positions = random_positions
    dtype, h = config.param_dtype, hidden
    uniform = lambda lo, hi: lambda key, shape, dt: jax.random.uniform(key, shape, dt, lo, hi)
    self.w1 = param(rngs, uniform(0.0, 1.0), (h,), (None,), dtype)
    self.b1 = param(rngs, uniform(-1.0, 0.0), (h,), (None,), dtype)
    self.w2 = param(rngs, uniform(-1.0 / h ** 0.5, 0.0), (h, config.heads), (None, None), dtype)
    self.b2 = param(rngs, nnx.initializers.zeros, (config.heads,), (None,), dtype)
    # c and L must stay positive: stored through softplus.
    self.c = param(rngs, nnx.initializers.constant(_inverse_softplus(init_c)), (), (), dtype)
    self.threshold = param(rngs, nnx.initializers.constant(_inverse_softplus(init_threshold)),
                           (), (), dtype)

  def normalized_distance(self, q_pos: jax.Array, k_pos: jax.Array) -> jax.Array:
    """float32[B, Tq, Tk] in [0, 1] for causal pairs: psi(i - j) / psi(max(L, i))."""
    c = jax.nn.softplus(self.c[...].astype(jnp.float32))
    threshold = jax.nn.softplus(self.threshold[...].astype(jnp.float32))
    q = q_pos.astype(jnp.float32)[:, :, None]
    distance = jnp.maximum(q - k_pos.astype(jnp.float32)[:, None, :], 0.0)
    psi = lambda x: jnp.log1p(c * x)
    return psi(distance) / jnp.maximum(psi(jnp.maximum(threshold, q)), 1e-6)

  def bias_table(self, size: int) -> jax.Array:
    """float32[heads, size, size]: the bias of every (query, key) position pair below `size`."""
    pos = jnp.arange(size, dtype=jnp.int32)[None]
    x = self.normalized_distance(pos, pos)[0, ..., None]                     # [P, P, 1]
    hidden = jax.nn.relu(x * self.w1[...] + self.b1[...])                    # [P, P, h]
    bias = jnp.sum(hidden[..., None] * self.w2[...], axis=-2) + self.b2[...]  # [P, P, N]
    return jnp.transpose(bias, (2, 0, 1)).astype(jnp.float32)

  def attention_bias(self, q_pos: jax.Array, k_pos: jax.Array) -> jax.Array:
    """The bias depends on positions only, so the MLP runs once on a [P, P] table of position
    pairs and each sample gathers its entries: running it per sample made a [B, Tq, Tk, h, N]
    fusion that XLA's GPU compiler took minutes over at 100-digit evaluation shapes.

    P bounds the positions: `random_positions` when set (training draws below it and
    `limits()` holds evaluation questions below it), else the key length (positions restart at
    0 in every packed sample, and a KV cache is as long as the positions it holds). A pair
    outside the table gets NaN, so a broken bound fails loudly instead of biasing silently;
    with `random_positions`, that includes a generation row running on past position P - 1
    (an answer already longer than any the model could have been asked for).
    """
    size = self.random_positions or k_pos.shape[1]
    q = q_pos.astype(jnp.int32)[:, :, None]
    k = k_pos.astype(jnp.int32)[:, None, :]
    table = self.bias_table(size).reshape(-1, size * size)                  # [N, P * P]
    bias = jnp.take(table, q * size + k, axis=1, mode="clip")               # [N, B, Tq, Tk]
    inside = (q >= 0) & (q < size) & (k >= 0) & (k < size)                  # [B, Tq, Tk]
    return jnp.where(inside[:, None], jnp.transpose(bias, (1, 0, 2, 3)), jnp.nan)
