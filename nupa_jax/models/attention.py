"""Grouped-query causal self-attention with segment masking and an optional KV cache.

The kernel is `jax.nn.dot_product_attention` (implementation `xla`, `cudnn` or `auto` from
config; see `implementation`), or cuDNN's packed-sequence entry point (below).
Packed rows are masked by segment id (a token sees only earlier tokens of its own sample);
ALiBi / FIRE add a per-pair bias. cuDNN takes such a mask as an additive bias over the whole
row, computing every causal pair of it; with `ModelConfig.cudnn_segments` on a GPU that has
cuDNN's packed layout (Hopper or later) it is given each row's segments as lengths and offsets
instead (`segment_layout`), and no mask at all. With a KV cache (decoding), the new keys and
values are written at a slot shared by the whole batch (prompts are left-aligned by the
caller) and the mask is causal in slot order; decoding always uses the XLA kernel.

A whole-row kernel over packed rows of short samples computes mostly masked pairs: a row of 16
samples holds ~16x the pairs its samples attend over. With `ModelConfig.attention_span` (the
longest sample, in positions) training passes attend in a band instead (`band_layout`): the
row is cut into blocks, and each block's queries see their own block and the one before it, in
XLA. Every pair the mask allows lies in that band when no sample is longer than the span, which
the data pipeline enforces, so the math is the mask's at every sample position. It pays where
the whole row would run through XLA's attention too (a learned bias: FIRE); cuDNN's fused kernel
over the whole row is as fast as the band's XLA operations (docs/benchmarks/README.md).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
# `jax.nn.dot_product_attention` takes no segment offsets; its cuDNN entry point does.
from jax._src.cudnn import fused_attention_stablehlo as cudnn_attention

from nupa_jax.models.layers import Dense, project, split_or_none
from nupa_jax.models.posenc import apply_rotary
from nupa_jax.models.presets import ModelConfig, cudnn_unsupported
from nupa_jax.sharding import constrain


class Context(NamedTuple):
  """What every layer's attention shares in one forward pass (computed once, at the top)."""
  rotary: tuple[jax.Array, jax.Array] | None  # (cos, sin) float32[B, T, head_dim]
  mask: jax.Array | None                      # bool[B, 1, T, S]: may attend
  bias: jax.Array | None                      # float32[B, heads, T, S]
  is_causal: bool                             # mask is only the segment part
  implementation: str                         # 'xla' | 'cudnn'
  segments: tuple[jax.Array, jax.Array] | None = None  # segment_layout, in place of mask
  band: Band | None = None                    # band_layout, in place of mask and bias


class Band(NamedTuple):
  """A packed row cut into blocks of `block` positions (the last one padded), each block's
  queries attending to the 2 * `block` keys of the block before it and their own."""
  allowed: jax.Array       # bool[B, blocks, block, 2 * block]: same segment and not later
  bias: jax.Array | None   # float32[B, blocks, heads, block, 2 * block], the PE's
  block: int


class LayerCache(NamedTuple):
  """The stacked cache of all layers, the layer being run, and the slot of the first new token."""
  k: jax.Array      # [layers, B, S, kv_heads, head_dim]
  v: jax.Array
  layer: jax.Array  # int32 scalar
  index: jax.Array  # int32 scalar


class Attention(nnx.Module):
  """q, k, v, o projections around the attention kernel (`Context.implementation`)."""

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
    e, n, k, h = config.hidden, config.heads, config.kv_heads, config.head_dim
    bias = config.qkv_bias
    self.q = Dense((e,), (n, h), ("embed", "heads", "head_dim"), config, rngs=rngs, bias=bias)
    self.k = Dense((e,), (k, h), ("embed", "kv_heads", "head_dim"), config, rngs=rngs, bias=bias)
    self.v = Dense((e,), (k, h), ("embed", "kv_heads", "head_dim"), config, rngs=rngs, bias=bias)
    self.o = Dense((n, h), (e,), ("heads", "head_dim", "embed"), config, rngs=rngs)
    self.fused = config.fused_projections

  def __call__(self, x: jax.Array, ctx: Context, cache: LayerCache | None = None, *,
               rng: jax.Array | None = None) -> tuple[jax.Array, LayerCache | None]:
    keys = split_or_none(rng, 4)
    q, k, v = project(x, (self.q, self.k, self.v), keys[:3], together=self.fused)
    if ctx.rotary is not None:
      q, k = apply_rotary(q, *ctx.rotary), apply_rotary(k, *ctx.rotary)
    if cache is not None:
      at = (cache.layer, 0, cache.index, 0, 0)
      cache = cache._replace(
          k=jax.lax.dynamic_update_slice(cache.k, k[None].astype(cache.k.dtype), at),
          v=jax.lax.dynamic_update_slice(cache.v, v[None].astype(cache.v.dtype), at))
      k = jax.lax.dynamic_index_in_dim(cache.k, cache.layer, keepdims=False)
      v = jax.lax.dynamic_index_in_dim(cache.v, cache.layer, keepdims=False)
    bias = ctx.bias
    # cuDNN's partitioner needs q, k and v sharded alike, but 2 KV heads may not split where 8
    # query heads do: its q, k, v keep the heads whole (rows only).
    heads = None if ctx.implementation == "cudnn" else "tensor"
    q, k, v = (constrain(a, "batch", None, heads) for a in (q, k, v))
    if ctx.implementation == "cudnn":
      # cuDNN takes the bias in q's dtype. In bf16 an ALiBi bias of 30 is rounded to a step of
      # 1/8, while the XLA path and decoding keep it in float32.
      if bias is not None:
        bias = bias.astype(q.dtype)
    if ctx.band is not None:
      out = _banded(q, k, v, ctx.band)
    elif ctx.segments is not None:
      out = _cudnn_by_segments(q, k, v, *ctx.segments)
    else:
      out = jax.nn.dot_product_attention(q, k, v, bias=bias, mask=ctx.mask,
                                         is_causal=ctx.is_causal,
                                         implementation=ctx.implementation)
    return self.o(out, rng=keys[3]), cache


def _cudnn_by_segments(q, k, v, lengths, offsets):
  """Causal attention within each segment of cuDNN's packed layout: the entry point that
  `jax.nn.dot_product_attention` wraps, with its scale."""
  return cudnn_attention.dot_product_attention(
      q, k, v, q_seqlen=lengths, kv_seqlen=lengths, q_offsets=offsets, kv_offsets=offsets,
      scale=1.0 / np.sqrt(q.shape[-1]), mask_type=cudnn_attention.MaskType.PADDING_CAUSAL)


def _banded(q: jax.Array, k: jax.Array, v: jax.Array, band: Band) -> jax.Array:
  """Attention within `band`, as `jax.nn.dot_product_attention`'s XLA path computes it: float32
  logits and softmax, probabilities in v's dtype; query head h reads key head h // groups."""
  b, length, heads, dim = q.shape
  kv_heads, w = k.shape[2], band.block
  blocks = band.allowed.shape[1]
  q = _blocks(q, w, 0).reshape(b, blocks, w, kv_heads, heads // kv_heads, dim)
  k, v = (_with_previous(_blocks(a, w, 0), 0) for a in (k, v))
  logits = _band_logits(q, k) * np.float32(1.0 / np.sqrt(dim))
  if band.bias is not None:
    logits = logits + band.bias.reshape(b, blocks, kv_heads, -1, w, 2 * w)
  logits = jnp.where(band.allowed[:, :, None, None], logits, jnp.finfo(jnp.float32).min)
  probs = jax.nn.softmax(logits, axis=-1).astype(v.dtype)
  out = jnp.einsum("bnkgqs,bnskd->bnqkgd", probs, v)
  return out.reshape(b, blocks * w, heads, dim)[:, :length]


@jax.custom_vjp
def _band_logits(q: jax.Array, k: jax.Array) -> jax.Array:
  """float32 q.k logits of the band's blocks (q [B, n, block, kv, groups, d], k [B, n, keys,
  kv, d] -> [B, n, kv, groups, block, keys])."""
  return jnp.einsum("bnqkgd,bnskd->bnkgqs", q, k, preferred_element_type=jnp.float32)


def _band_logits_fwd(q, k):
  return _band_logits(q, k), (q, k)


def _band_logits_bwd(saved, grad):
  """The logits' gradient rounded to q's dtype before the two matmuls, as flash attention's
  backward pass does (float32 accumulation): in float32 those matmuls would run on slower
  kernels, and the rounding is a no-op for float32 models."""
  q, k = saved
  grad = grad.astype(q.dtype)
  dq = jnp.einsum("bnkgqs,bnskd->bnqkgd", grad, k, preferred_element_type=jnp.float32)
  dk = jnp.einsum("bnkgqs,bnqkgd->bnskd", grad, q, preferred_element_type=jnp.float32)
  return dq.astype(q.dtype), dk.astype(k.dtype)


_band_logits.defvjp(_band_logits_fwd, _band_logits_bwd)


def _blocks(x: jax.Array, block: int, fill) -> jax.Array:
  """[B, T, ...] -> [B, ceil(T / block), block, ...], the end padded with `fill`."""
  blocks = -(-x.shape[1] // block)
  pad = [(0, 0), (0, blocks * block - x.shape[1])] + [(0, 0)] * (x.ndim - 2)
  return jnp.pad(x, pad, constant_values=fill).reshape(x.shape[0], blocks, block, *x.shape[2:])


def _with_previous(x: jax.Array, fill) -> jax.Array:
  """[B, n, block, ...] -> [B, n, 2 * block, ...]: each block after the one before it (`fill`
  before the first)."""
  pad = [(0, 0), (1, 0)] + [(0, 0)] * (x.ndim - 2)
  previous = jnp.pad(x, pad, constant_values=fill)[:, :-1]
  return jnp.concatenate([previous, x], axis=2)


def band_block(span: int) -> int:
  """The block of a band holding samples of up to `span` positions: a query's keys start at the
  start of the block before its own, at least block + 1 positions back; a multiple of 8."""
  return max(8, -(-(span - 1) // 8) * 8)


def band_layout(segment_ids: jax.Array, positions: jax.Array, span: int,
                attention_bias: Callable[[jax.Array, jax.Array], jax.Array | None]) -> Band:
  """The `Band` of packed rows whose samples are at most `span` positions long.

  `attention_bias(q_pos, k_pos)` is the PE's bias (or None), taken on the band's blocks. The
  rows' padding (segment 0), which no loss reads, attends within the band only, so its own
  outputs may differ from the whole-row mask's; nothing else attends to it.
  """
  w = band_block(span)
  q_segments = _blocks(segment_ids, w, -1)          # the block padding: a segment of its own
  k_segments = _with_previous(q_segments, -2)       # before the row: none
  q_index = jnp.arange(q_segments.shape[1] * w).reshape(-1, w)
  k_index = _with_previous(q_index[None], -1)[0]
  allowed = ((q_segments[..., :, None] == k_segments[..., None, :])
             & (k_index[:, None, :] <= q_index[:, :, None])[None])
  b, blocks = q_segments.shape[:2]
  q_pos = _blocks(positions, w, 0)
  k_pos = _with_previous(q_pos, 0)
  bias = attention_bias(q_pos.reshape(b * blocks, w), k_pos.reshape(b * blocks, 2 * w))
  if bias is not None:
    bias = bias.reshape(b, blocks, *bias.shape[1:])
  return Band(allowed, bias, w)


def packed_layout_available() -> bool:
  """Whether cuDNN's packed layout runs here: a CUDA GPU of compute capability 9.0 (Hopper) or
  later, by the test jax's cuDNN attention itself applies (elsewhere it refuses the layout as
  the first step is traced)."""
  return cudnn_attention.check_compute_capability("9.0")


def training_mask(segment_ids: jax.Array | None) -> jax.Array | None:
  """bool[B, 1, T, T] same-segment mask (the kernel adds causality), None if unpacked."""
  if segment_ids is None:
    return None
  return (segment_ids[:, :, None] == segment_ids[:, None, :])[:, None]


def segment_layout(segment_ids: jax.Array, most: int) -> tuple[jax.Array, jax.Array]:
  """(lengths int32[B, most], offsets int32[B, most + 1]) of packed rows for cuDNN.

  A row holds samples 1, 2, ... one after another, then its padding (segment id 0), as
  `data.packing.pack` lays them out. Slot j < most - 1 is sample j + 1 and the last slot the
  padding, which attends to itself as the mask does; an empty slot is -1 in both arrays, as
  cuDNN's layout wants, and the last offset is always -1. Samples past slot most - 2 share the
  padding's slot: sample most - 1 alone there attends as before (its padding comes after it),
  two samples there would see each other. The trainer therefore asks for `cudnn_segments`
  above the samples a row holds, one slot of margin.
  """
  ids = jnp.where(segment_ids == 0, most, jnp.minimum(segment_ids, most))
  slots = jnp.arange(1, most + 1, dtype=ids.dtype)
  lengths = (ids[:, None, :] == slots[None, :, None]).sum(-1, dtype=jnp.int32)
  starts = jnp.cumsum(lengths, axis=-1, dtype=jnp.int32) - lengths
  empty = lengths == 0
  offsets = jnp.pad(jnp.where(empty, -1, starts), ((0, 0), (0, 1)), constant_values=-1)
  return jnp.where(empty, -1, lengths), offsets


def check_segments(most: int, samples_per_row: int) -> None:
  """ValueError unless `most` segments (`ModelConfig.cudnn_segments`; 0: a mask) hold a row's
  samples and its padding (`segment_layout`: beyond them, samples share a segment)."""
  if 0 < most <= samples_per_row:
    raise ValueError(f"config.model.cudnn_segments={most} must exceed the {samples_per_row} "
                     f"samples a row holds (one more for its padding): set it to "
                     f"{samples_per_row + 1}, or 0 for a mask")


def cache_mask(q_segments: jax.Array, k_segments: jax.Array, index: jax.Array) -> jax.Array:
  """bool[B, 1, T, S]: same segment and not a later slot; empty slots have segment 0."""
  t, s = q_segments.shape[1], k_segments.shape[1]
  causal = (index + jnp.arange(t))[:, None] >= jnp.arange(s)[None, :]
  same = q_segments[:, :, None] == k_segments[:, None, :]
  return (same & causal[None])[:, None]


def implementation(config: ModelConfig, learned_bias: bool) -> str:
  """The attention kernel of training passes: the config's, where 'auto' takes cuDNN's fused
  flash attention on GPU when it applies (bf16 / fp16, head_dim a multiple of 8 up to 256, no
  learned bias) and XLA otherwise, so one config runs on CPU tests and GPUs alike."""
  if config.attention_impl != "auto":
    return config.attention_impl
  usable = not learned_bias and cudnn_unsupported(config) is None
  return "cudnn" if usable and jax.default_backend() == "gpu" else "xla"
