"""The positional-encoding interface and its registry.

A positional encoding is an `nnx.Module` built once per model (shared by all layers) that
implements only the hooks it needs; the defaults do nothing, so NoPE implements none:

- `prepare(features, rng=, deterministic=)`: training-time randomisation of the position
  inputs, once per forward pass (random positions, Abacus / coupling offsets);
- `embed(x, features)`: add a learned embedding to the token embeddings (absolute, Abacus);
- `rotary(positions)`: (cos, sin) tables in Hugging Face Llama's rotate-half layout, applied to
  queries and keys by `apply_rotary` in every layer (RoPE). Tables rather than a
  `rotate(q, k, positions)` hook let the model compute them once per pass instead of once per
  layer inside the scan over layers;
- `attention_bias(q_pos, k_pos)`: float32[B, heads, Tq, Tk] added to attention logits
  (ALiBi, FIRE).

`inputs` names the extra per-token features a PE reads (`digit_index`, `significance`, as
`nupa_jax.text.Encoder.positions` provides them); the model refuses to run without them.

`limits()` says how far each position input reaches before a PE stops telling values apart
(a learned table clips indices to its last row; randomized positions only train values below
their range). Inside jit a clipped index cannot raise, so the evaluator checks the inputs of
its longest samples against them at start-up (`check_limits`).
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nupa_jax.models.presets import ModelConfig


class Features(NamedTuple):
  """Per-token position inputs, all int32[B, T]; the optional ones are None when absent."""
  positions: jax.Array
  segment_ids: jax.Array
  digit_index: jax.Array | None = None
  significance: jax.Array | None = None


class PositionalEncoding(nnx.Module):
  """Base class: every hook is a no-op (= NoPE)."""
  name: ClassVar[str]
  inputs: ClassVar[frozenset[str]] = frozenset()
  learned_bias: ClassVar[bool] = False  # attention_bias has parameters (needs the xla path)

  @property
  def needs_rng(self) -> bool:
    """Whether `prepare` draws random numbers when not deterministic."""
    return False

  def prepare(self, features: Features, *, rng: jax.Array | None,
              deterministic: bool) -> Features:
    del rng, deterministic
    return features

  def embed(self, x: jax.Array, features: Features) -> jax.Array:
    del features
    return x

  def rotary(self, positions: jax.Array) -> tuple[jax.Array, jax.Array] | None:
    del positions
    return None

  def attention_bias(self, q_pos: jax.Array, k_pos: jax.Array) -> jax.Array | None:
    del q_pos, k_pos
    return None

  def limits(self) -> dict[str, tuple[int, str]]:
    """{input: (largest value, option)}: the largest `positions` / `digit_index` /
    `significance` value this PE represents as itself, and the option that sets it. Empty
    (the default) when every value is (relative, rotary or no positions)."""
    return {}


def check_limits(pe: PositionalEncoding, extents: Mapping[str, int], what: str) -> None:
  """Raises ValueError when `extents` ({input: largest value that `what` feeds the model})
  pass the PE's `limits`, naming the option to raise."""
  for name, (largest, option) in sorted(pe.limits().items()):
    reached = extents.get(name, 0)
    if reached > largest:
      raise ValueError(f"positional encoding {pe.name!r} represents {name} up to {largest} "
                       f"(option {option}), but {what} reaches {reached}: set "
                       f"config.model.posenc.{option} >= {reached}")


def apply_rotary(x: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
  """Rotate x[B, T, heads, D] by tables [B, T, D]: x*cos + rotate_half(x)*sin, in float32.

  rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2]) pairs dimension i with i + D/2, the
  layout of Hugging Face Llama checkpoints (not the interleaved pairs of the RoPE paper). It is
  computed as the two halves swapped (a reverse of a length-2 axis) times a constant sign: the
  same numbers, but a pure index map that XLA fuses into the elementwise pass, where a
  concatenate of slices (and its transpose, a pad and add per half) stands in its way.
  """
  x32 = x.astype(jnp.float32)
  half = x.shape[-1] // 2
  swapped = jnp.flip(x32.reshape(x.shape[:-1] + (2, half)), axis=-2).reshape(x.shape)
  rotated = swapped * np.repeat(np.array([-1.0, 1.0], np.float32), half)
  out = x32 * cos[:, :, None, :] + rotated * sin[:, :, None, :]
  return out.astype(x.dtype)


_REGISTRY: dict[str, type[PositionalEncoding]] = {}


def register(name: str):
  """Class decorator: make a PositionalEncoding buildable as posenc={"name": name, ...}."""
  def decorate(cls: type[PositionalEncoding]) -> type[PositionalEncoding]:
    if name in _REGISTRY:
      raise ValueError(f"positional encoding {name!r} registered twice")
    cls.name = name
    _REGISTRY[name] = cls
    return cls
  return decorate


def names() -> list[str]:
  return sorted(_REGISTRY)


def options(name: str) -> list[str]:
  """The options a registered PE accepts (its constructor's keyword arguments)."""
  params = inspect.signature(_REGISTRY[name].__init__).parameters
  return [p for p in params if p not in ("self", "config", "rngs")]


def build(config: ModelConfig, *, rngs: nnx.Rngs) -> PositionalEncoding:
  """The PE named by config.posenc = {"name": ..., **options}."""
  opts: dict[str, Any] = dict(config.posenc_options)
  name = opts.pop("name", None)
  if name not in _REGISTRY:
    raise ValueError(f"unknown positional encoding {name!r}; known: {', '.join(names())}")
  unknown = sorted(set(opts) - set(options(name)))
  if unknown:
    raise ValueError(f"positional encoding {name!r} has no options {unknown}; "
                     f"known: {', '.join(options(name)) or '(none)'}")
  return _REGISTRY[name](config, rngs=rngs, **opts)
