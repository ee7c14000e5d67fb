"""The Llama-style decoder: embeddings, a scan over identical blocks, RMSNorm, output head.

Blocks are stacked: every layer parameter has a leading `layers` axis. By default
(`scan_unroll=True`, or any value >= the layers) the layers run as a Python loop over static
slices (or, with `split_layers`, one split per stacked parameter), which train faster than a
rolled scan and compile as fast (docs/benchmarks/ has the measurements); a smaller
`scan_unroll` runs a `jax.lax.scan` that bounds compile time for deep models. With a remat
policy the layers always run as a rolled scan (`scan_unroll` and `split_layers` do not apply),
the only form in which recomputation lowers memory (see `_run_layers`). Inside the
scan each layer's slice is merged into a plain `Block` — NNX kept functional, no NNX transform
at run time. The positional encoding is one module shared by all layers; its rotary tables,
attention bias and mask are computed once per pass.

Two entry points: `__call__` (training / scoring: logits for every token of packed rows) and
`extend` (decoding: append tokens to a `KVCache`, see `nupa_jax.evaluation.generate`).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nupa_jax.models import embeddings, posenc
from nupa_jax.models.attention import (Attention, Context, LayerCache, band_layout, cache_mask,
                                       implementation, packed_layout_available,
                                       segment_layout, training_mask)
from nupa_jax.models.layers import MLP, Dense, RMSNorm, split_or_none
from nupa_jax.models.presets import REMAT_POLICIES, ModelConfig, resolve
from nupa_jax.sharding import constrain

# The attribute holding the stacked blocks: every parameter under it has a leading layer axis.
STACKED_BLOCKS = "layers"


class KVCache(NamedTuple):
  """Keys and values of every layer for S slots, with each slot's segment id and position."""
  k: jax.Array            # [layers, B, S, kv_heads, head_dim], compute dtype
  v: jax.Array
  segment_ids: jax.Array  # int32[B, S]; 0 = empty slot or padding
  positions: jax.Array    # int32[B, S]; key positions for attention biases
  index: jax.Array        # int32 scalar: the next free slot


class Block(nnx.Module):
  """Pre-norm attention and SwiGLU MLP, each in a residual branch."""

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
    self.attn_norm = RMSNorm(config, rngs=rngs)
    self.attn = Attention(config, rngs=rngs)
    self.mlp_norm = RMSNorm(config, rngs=rngs)
    self.mlp = MLP(config, rngs=rngs)

  def __call__(self, x: jax.Array, ctx: Context, cache: LayerCache | None = None, *,
               rng: jax.Array | None = None) -> tuple[jax.Array, LayerCache | None]:
    k_attn, k_mlp = split_or_none(rng, 2)
    # The scopes name the branches in the compiled program's metadata, which profiles show.
    with jax.named_scope("attention"):
      h, cache = self.attn(self.attn_norm(x), ctx, cache, rng=k_attn)
      x = constrain(x + h, "batch")
    with jax.named_scope("mlp"):
      return constrain(x + self.mlp(self.mlp_norm(x), rng=k_mlp), "batch"), cache


def _stacked_blocks(config: ModelConfig, rngs: nnx.Rngs) -> Block:
  @nnx.split_rngs(splits=config.num_layers)
  @nnx.vmap(in_axes=0, out_axes=0, transform_metadata={nnx.PARTITION_NAME: "layers"})
  def make(rngs: nnx.Rngs) -> Block:
    return Block(config, rngs=rngs)
  return make(rngs)


class Transformer(nnx.Module):
  """Decoder-only transformer; `config` is a resolved `ModelConfig` (use `build`)."""

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs,
               digit_token_table: np.ndarray | None = None):
    self.config = config
    self.embed = embeddings.build(config, digit_token_table, rngs=rngs)
    self.posenc = posenc.build(config, rngs=rngs)
    if config.attention_impl == "cudnn" and self.posenc.learned_bias:
      raise ValueError(f"posenc {self.posenc.name!r} learns a per-sample attention bias, whose "
                       "gradient cuDNN attention does not give; use attention_impl='xla'")
    self.layers = _stacked_blocks(config, rngs)
    self.norm = RMSNorm(config, rngs=rngs)
    self.head = None if config.tie_embeddings else Dense(
        (config.hidden,), (config.vocab_size,), ("embed", "vocab"), config, rngs=rngs,
        out_dtype="float32")

  def __call__(self, inputs: jax.Array, *, positions: jax.Array | None = None,
               segment_ids: jax.Array | None = None, digit_index: jax.Array | None = None,
               significance: jax.Array | None = None, deterministic: bool = True,
               rng: jax.Array | None = None) -> jax.Array:
    """float32[B, T, V] logits for int32[B, T] tokens.

    positions default to 0..T-1; segment_ids (1.. per packed sample, 0 = padding) default to
    one sample per row, and tokens attend only within their segment. digit_index /
    significance feed the PEs that need them. With deterministic=False the PE's training-time
    randomisation and LoRA dropout are on; they draw from `rng`.
    """
    if not deterministic and rng is None and self.requires_rng():
      raise ValueError("deterministic=False needs rng= (random positions / offsets or LoRA "
                       "dropout draw from it)")
    features = self._features(inputs, positions, segment_ids, digit_index, significance)
    x, _ = self._forward(inputs, features, packed=segment_ids is not None, cache=None,
                         rng=None if deterministic else rng, deterministic=deterministic)
    return self._logits(x)

  def init_cache(self, batch: int, length: int) -> KVCache:
    """An empty cache of `length` slots per row."""
    c = self.config
    shape = (c.num_layers, batch, length, c.kv_heads, c.head_dim)
    return KVCache(k=jnp.zeros(shape, c.dtype), v=jnp.zeros(shape, c.dtype),
                   segment_ids=jnp.zeros((batch, length), jnp.int32),
                   positions=jnp.zeros((batch, length), jnp.int32),
                   index=jnp.zeros((), jnp.int32))

  def extend(self, cache: KVCache, inputs: jax.Array, *, positions: jax.Array,
             segment_ids: jax.Array, digit_index: jax.Array | None = None,
             significance: jax.Array | None = None,
             last_only: bool = False) -> tuple[jax.Array, KVCache]:
    """Append int32[B, T] tokens at slots [cache.index, cache.index + T) of every row.

    Returns float32 logits for the new tokens ([B, 1, V] for the last one if last_only) and
    the updated cache. Deterministic (evaluation positions, no dropout); XLA attention.
    """
    features = self._features(inputs, positions, segment_ids, digit_index, significance)
    x, cache = self._forward(inputs, features, packed=True, cache=cache, rng=None,
                             deterministic=True)
    return self._logits(x[:, -1:] if last_only else x), cache

  def requires_rng(self) -> bool:
    """Whether a non-deterministic pass draws random numbers (PE randomisation, dropout)."""
    return any(getattr(m, "needs_rng", False) for _, m in nnx.iter_modules(self))

  def _features(self, inputs, positions, segment_ids, digit_index, significance):
    batch, length = inputs.shape
    given = {"digit_index": digit_index, "significance": significance}
    for name in sorted(self.posenc.inputs):
      if given[name] is None:
        raise ValueError(f"posenc {self.posenc.name!r} needs {name}= (per-token, from the text "
                         "layer's Encoder.positions)")
    if positions is None:
      positions = jnp.broadcast_to(jnp.arange(length, dtype=jnp.int32), (batch, length))
    if segment_ids is None:
      segment_ids = jnp.ones((batch, length), jnp.int32)
    as_int = lambda a: None if a is None else jnp.asarray(a, jnp.int32)
    return posenc.Features(as_int(positions), as_int(segment_ids), as_int(digit_index),
                           as_int(significance))

  def _forward(self, tokens: jax.Array, features: posenc.Features, *, packed: bool,
               cache: KVCache | None, rng: jax.Array | None,
               deterministic: bool) -> tuple[jax.Array, KVCache | None]:
    """Final-norm hidden states [B, T, hidden] (and the extended cache)."""
    pe_rng, layer_rng = split_or_none(rng, 2)
    features = self.posenc.prepare(features, rng=pe_rng, deterministic=deterministic)
    x = constrain(self.posenc.embed(self.embed(tokens), features), "batch")
    if cache is None:
      k_positions = features.positions
      mask = training_mask(features.segment_ids if packed else None)
      is_causal, kernel = True, implementation(self.config, self.posenc.learned_bias)
    else:
      at = (0, cache.index)
      cache = cache._replace(
          segment_ids=jax.lax.dynamic_update_slice(cache.segment_ids, features.segment_ids, at),
          positions=jax.lax.dynamic_update_slice(cache.positions, features.positions, at))
      k_positions = cache.positions
      mask = cache_mask(features.segment_ids, cache.segment_ids, cache.index)
      is_causal, kernel = False, "xla"
    rotary = self.posenc.rotary(features.positions)
    if cache is None and packed and self.config.attention_span:
      band = band_layout(features.segment_ids, features.positions, self.config.attention_span,
                         self.posenc.attention_bias)
      ctx = Context(rotary=rotary, mask=None, bias=None, is_causal=True, implementation="xla",
                    band=band)
    else:
      bias = self.posenc.attention_bias(features.positions, k_positions)
      segments = None
      if (mask is not None and kernel == "cudnn" and bias is None
          and self.config.cudnn_segments and packed_layout_available()):
        lengths, offsets = segment_layout(features.segment_ids, self.config.cudnn_segments)
        # Row by row with q, k and v, which cuDNN's partitioner assumes of these operands.
        segments, mask = (constrain(lengths, "batch"), constrain(offsets, "batch")), None
      ctx = Context(rotary=rotary, mask=mask, bias=bias, is_causal=is_causal,
                    implementation=kernel, segments=segments)
    x, cache = self._run_layers(x, ctx, cache, layer_rng)
    return self.norm(x), cache

  def _run_layers(self, x: jax.Array, ctx: Context, cache: KVCache | None,
                  rng: jax.Array | None) -> tuple[jax.Array, KVCache | None]:
    graphdef, stacked = nnx.split(self.layers)
    n = self.config.num_layers
    keys = None if rng is None else jax.random.split(rng, n)
    index = None if cache is None else cache.index

    def body(carry, xs):
      x, kv = carry
      state, key, layer = xs
      block = nnx.merge(graphdef, state)
      layer_cache = None if kv is None else LayerCache(kv[0], kv[1], layer, index)
      x, layer_cache = block(x, ctx, layer_cache, rng=key)
      return (x, None if kv is None else (layer_cache.k, layer_cache.v)), None

    policy = REMAT_POLICIES[self.config.remat] if cache is None else None
    unroll = self.config.scan_unroll
    if policy is not None:
      # Recomputing saves memory only when the layers run as a rolled scan. Unrolled, by a
      # Python loop or a scan's `unroll`, XLA's scheduler starts each layer's recomputation as
      # early as the forward pass and keeps every activation after all (compiled temp memory
      # no lower than without remat).
      body = jax.checkpoint(body, policy=policy, prevent_cse=False)
      unroll = 1
    carry = (x, None if cache is None else (cache.k, cache.v))
    if unroll is True or unroll >= n:
      # A Python loop over static layer slices: the backward pass reads each layer's
      # activations where the forward left them, while even a fully unrolled scan stacks them
      # into [layers, ...] arrays and slices them back (~1 ms of copies a step for the 100m
      # preset at batch 256 on an H100).
      for i, state in enumerate(_layer_states(stacked, n, self.config.split_layers)):
        carry, _ = body(carry, (state, None if keys is None else keys[i], jnp.int32(i)))
    else:
      carry, _ = jax.lax.scan(body, carry, (stacked, keys, jnp.arange(n)), unroll=unroll)
    x, kv = carry
    if cache is not None:
      cache = cache._replace(k=kv[0], v=kv[1], index=cache.index + x.shape[1])
    return x, cache

  def _logits(self, x: jax.Array) -> jax.Array:
    logits = self.embed.attend(x) if self.head is None else self.head(x)
    return constrain(logits, "batch", None, "tensor")


def _layer_states(stacked: nnx.State, n: int, split: bool) -> list[nnx.State]:
  """Each layer's slice of the stacked parameters: a static slice per layer and parameter,
  whose transpose in the backward pass pads each layer's gradient to the stacked shape and adds
  them up, or (split=True) one split per parameter, whose transpose is one concatenate."""
  if not split:
    return [jax.tree.map(lambda a, i=i: a[i], stacked) for i in range(n)]
  leaves, treedef = jax.tree.flatten(stacked)
  pieces = [jax.lax.split(a, (1,) * n) for a in leaves]
  return [treedef.unflatten([p[i].reshape(p[i].shape[1:]) for p in pieces]) for i in range(n)]


def build(model_config, vocab_size: int, *, rngs: nnx.Rngs,
          digit_token_table: np.ndarray | None = None) -> Transformer:
  """A Transformer from a config dict / ConfigDict (`preset` and/or explicit fields).

  digit_token_table (int32[vocab_size, k_max], per-place digits of each token, -1 for none;
  see `embeddings`) is required when the config sets digit_embeddings=True.
  """
  return Transformer(resolve(model_config, vocab_size), rngs=rngs,
                     digit_token_table=digit_token_table)


def count_params(model_config, vocab_size: int,
                 digit_token_table: np.ndarray | None = None) -> int:
  """Trainable parameters of a config, from shapes only (nothing is allocated)."""
  model = nnx.eval_shape(lambda: build(model_config, vocab_size, rngs=nnx.Rngs(0),
                                       digit_token_table=digit_token_table))
  return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
