"""LoRA (Hu et al. 2021): low-rank adapters on chosen projections of any built model.

`apply` attaches an adapter to every targeted `Dense` (q, k, v, o of attention; gate, up,
down of the MLP): y = W x + (alpha / rank) * B A dropout(x), with A random and B zero, so the
adapted model starts exactly where the base model is. Adapter weights are `LoRAParam`, a
Variable type of their own (not an `nnx.Param`), so

    optimizer = nnx.Optimizer(model, tx, wrt=lora.LoRAParam)
    grads = nnx.grad(loss_fn, argnums=nnx.DiffState(0, lora.LoRAParam))(model, batch)

train only the adapters. `merge` folds them into the base kernels for plain inference.
Stacked layers work unchanged: adapters get the same leading `layers` axis as their kernel.
"""
from __future__ import annotations

from collections.abc import Iterable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nupa_jax.models.layers import Dense, contract, param

TARGETS = ("q", "k", "v", "o", "gate", "up", "down")


class LoRAParam(nnx.Variable):
  """A LoRA adapter weight: the only trainable state of a LoRA fine-tune."""


class LoRA(nnx.Module):
  """The low-rank update of one Dense, sized from its kernel (leading stacked axes kept)."""

  def __init__(self, base: Dense, rank: int, alpha: float, dropout: float, *, rngs: nnx.Rngs):
    kernel = base.kernel
    names = tuple(kernel.get_metadata()["out_sharding"])   # with "layers" when stacked
    lead = kernel.ndim - len(base.in_shape) - len(base.out_shape)
    lead_shape, lead_names = tuple(kernel.shape[:lead]), names[:lead]
    in_names = names[lead:lead + len(base.in_shape)]
    out_names = names[lead + len(base.in_shape):]
    bound = 1.0 / np.sqrt(np.prod(base.in_shape))  # PEFT's kaiming-uniform(a=sqrt(5)) bound
    uniform = lambda key, shape, dtype: jax.random.uniform(key, shape, dtype, -bound, bound)
    dtype = kernel.dtype
    self.a = param(rngs, uniform, lead_shape + base.in_shape + (rank,),
                   lead_names + in_names + (None,), dtype, LoRAParam)
    self.b = param(rngs, nnx.initializers.zeros, lead_shape + (rank,) + base.out_shape,
                   lead_names + (None,) + out_names, dtype, LoRAParam)
    self.n_in, self.scale, self.dropout = len(base.in_shape), alpha / rank, dropout

  @property
  def needs_rng(self) -> bool:
    return self.dropout > 0

  def __call__(self, x: jax.Array, *, rng: jax.Array | None = None) -> jax.Array:
    if rng is not None and self.dropout > 0:
      keep = jax.random.bernoulli(rng, 1.0 - self.dropout, x.shape)
      x = jnp.where(keep, x / (1.0 - self.dropout), 0).astype(x.dtype)
    h = contract(x, self.a[...], self.n_in)
    return contract(h, self.b[...], 1) * jnp.asarray(self.scale, h.dtype)

  def delta(self) -> jax.Array:
    """(alpha / rank) * A B in the base kernel's shape (leading stacked axes included)."""
    a, b = self.a[...], self.b[...]
    lead = a.ndim - self.n_in - 1
    a2 = a.reshape(a.shape[:lead] + (-1, a.shape[-1]))
    b2 = b.reshape(b.shape[:lead + 1] + (-1,))
    delta = jnp.matmul(a2, b2) * self.scale
    return delta.reshape(a.shape[:-1] + b.shape[lead + 1:])


def _targeted(model: nnx.Module, targets: Iterable[str]):
  targets = tuple(targets)
  unknown = sorted(set(targets) - set(TARGETS))
  if unknown:
    raise ValueError(f"unknown LoRA targets {unknown}; known: {', '.join(TARGETS)}")
  for path, module in nnx.iter_modules(model):
    if isinstance(module, Dense) and path and path[-1] in targets:
      yield module


def apply(model: nnx.Module, *, rank: int, alpha: float, dropout: float = 0.0,
          targets: Iterable[str] = ("q", "k", "v", "o"), rngs: nnx.Rngs) -> nnx.Module:
  """Attach adapters to `model` in place (and return it); the base weights are untouched."""
  count = 0
  for dense in list(_targeted(model, targets)):
    if dense.lora is not None:
      raise ValueError("model already has LoRA adapters; merge them first")
    dense.lora = LoRA(dense, rank, alpha, dropout, rngs=rngs)
    count += 1
  if not count:
    raise ValueError(f"no projection of the model matches LoRA targets {tuple(targets)}")
  return model


def merge(model: nnx.Module) -> nnx.Module:
  """Fold every adapter into its base kernel (in place) and remove the adapters."""
  for _, module in list(nnx.iter_modules(model)):
    if isinstance(module, Dense) and module.lora is not None:
      kernel = module.kernel[...]
      module.kernel[...] = (kernel + module.lora.delta().astype(kernel.dtype))
      module.lora = None
  return model
