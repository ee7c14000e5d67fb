"""The decoder's building blocks: a multi-axis dense projection, RMSNorm and the SwiGLU MLP.

Parameters are stored in `param_dtype` (float32) and cast to the compute `dtype` (bfloat16 on
accelerators) at use. Every parameter carries logical axis names in its `out_sharding`
metadata (`embed`, `mlp`, `heads`, ...); eager sharding is off so models build without a mesh,
and the trainer maps the names to mesh axes (`nnx.get_partition_spec` under logical rules).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from nupa_jax.models.presets import ModelConfig
from nupa_jax.sharding import constrain, tensor_parallel


def param(rngs: nnx.Rngs, init: Any, shape: tuple[int, ...], names: tuple[str | None, ...],
          dtype: Any, variable: type[nnx.Variable] = nnx.Param) -> nnx.Variable:
  """A parameter with logical axis names (one per dimension) and no eager sharding."""
  assert len(names) == len(shape), (names, shape)
  return variable(init(rngs.params(), shape, dtype), out_sharding=names, eager_sharding=False)


def contract(x: jax.Array, kernel: jax.Array, n: int, out_dtype: Any = None) -> jax.Array:
  """x[..., *in] . kernel[*in, *out] -> [..., *out], contracting x's last n axes."""
  dims = ((tuple(range(x.ndim - n, x.ndim)), tuple(range(n))), ((), ()))
  return jax.lax.dot_general(x, kernel.astype(x.dtype), dims, preferred_element_type=out_dtype)


class Dense(nnx.Module):
  """A projection between multi-axis feature shapes (e.g. embed -> heads x head_dim), with a
  bias only if asked (`bias=True`: Qwen2's q, k, v).

  `lora` holds an optional low-rank adapter (`nupa_jax.models.lora`) added to the output; the
  `rng` argument feeds the adapter's dropout and is ignored otherwise. The output has the
  compute dtype unless `out_dtype` asks for more (the output head gives float32 logits).
  """

  def __init__(self, in_shape: tuple[int, ...], out_shape: tuple[int, ...],
               names: tuple[str | None, ...], config: ModelConfig, *, rngs: nnx.Rngs,
               out_dtype: str | None = None, bias: bool = False):
    self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
    self.names = tuple(names)
    self.dtype, self.out_dtype = config.dtype, out_dtype
    self.kernel = param(rngs, nnx.initializers.normal(config.init_std),
                        self.in_shape + self.out_shape, self.names, config.param_dtype)
    self.bias = nnx.data(None) if not bias else param(
        rngs, nnx.initializers.zeros, self.out_shape, self.names[len(self.in_shape):],
        config.param_dtype)
    self.lora = nnx.data(None)

  def __call__(self, x: jax.Array, *, rng: jax.Array | None = None) -> jax.Array:
    x = x.astype(self.dtype)
    return self.finish(x, contract(x, self.kernel[...], len(self.in_shape), self.out_dtype),
                       rng=rng)

  def finish(self, x: jax.Array, y: jax.Array, *, rng: jax.Array | None = None) -> jax.Array:
    """The projection of x (in the compute dtype) given y = x . kernel: y plus the bias and
    the LoRA update, where there are."""
    if self.bias is not None:
      y = y + self.bias[...].astype(y.dtype)
    if self.lora is not None:
      y = y + self.lora(x, rng=rng).astype(y.dtype)
    return y


def project(x: jax.Array, denses: Sequence[Dense], keys: Sequence[jax.Array | None], *,
            together: bool) -> list[jax.Array]:
  """Each Dense of `denses` (same input shape and dtypes) applied to x.

  together=True runs one matmul over their kernels concatenated on the flattened output axes
  at run time and splits its result: the same dot products, so the same numbers. The backward
  pass then makes one input-gradient matmul instead of one per projection plus their sum, and
  one weight-gradient matmul whose operand XLA need not concatenate itself (its dot merger
  copies the output gradients of projections that share an input into one array). On a
  tensor-parallel mesh the projections run apart: concatenating kernels split over `tensor`
  on their output axes would regather them.
  """
  if not together or tensor_parallel():
    return [dense(x, rng=key) for dense, key in zip(denses, keys)]
  first = denses[0]
  x = x.astype(first.dtype)
  n_in = len(first.in_shape)
  kernel = jnp.concatenate([d.kernel[...].reshape(first.in_shape + (-1,)) for d in denses],
                           axis=-1)
  widths = [math.prod(d.out_shape) for d in denses]
  parts = jax.lax.split(contract(x, kernel, n_in, first.out_dtype), widths, axis=-1)
  return [d.finish(x, part.reshape(part.shape[:-1] + d.out_shape), rng=key)
          for d, part, key in zip(denses, parts, keys)]


class RMSNorm(nnx.Module):
  """Root-mean-square norm computed in float32, as Llama (and Hugging Face) does."""

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
    self.eps, self.dtype = config.norm_eps, config.dtype
    self.scale = param(rngs, nnx.initializers.ones, (config.hidden,), ("embed",),
                       config.param_dtype)

  def __call__(self, x: jax.Array) -> jax.Array:
    x32 = x.astype(jnp.float32)
    x32 = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
    return self.scale[...].astype(self.dtype) * x32.astype(self.dtype)


class MLP(nnx.Module):
  """SwiGLU feed-forward: down(silu(gate(x)) * up(x))."""

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
    e, m = (config.hidden,), (config.mlp,)
    self.gate = Dense(e, m, ("embed", "mlp"), config, rngs=rngs)
    self.up = Dense(e, m, ("embed", "mlp"), config, rngs=rngs)
    self.down = Dense(m, e, ("mlp", "embed"), config, rngs=rngs)
    self.fused = config.fused_projections

  def __call__(self, x: jax.Array, *, rng: jax.Array | None = None) -> jax.Array:
    keys = split_or_none(rng, 3)
    gate, up = project(x, (self.gate, self.up), keys[:2], together=self.fused)
    h = jax.nn.silu(gate) * up
    return self.down(constrain(h, "batch", None, "tensor"), rng=keys[2])


def split_or_none(rng: jax.Array | None, n: int) -> list[jax.Array | None]:
  """n independent keys, or n Nones when running deterministically."""
  return [None] * n if rng is None else list(jax.random.split(rng, n))
