"""Jitted autoregressive decoding with a KV cache, for a batch of prompts of different lengths.

Prompts come right-padded (`prompts[i, :prompt_lengths[i]]` is prompt i, the rest is
ignored). Inside, each row is shifted to end at slot P - 1 (left padding), so every row
writes its next token to the same cache slot and one `dynamic_update_slice` serves the batch;
positions still count from 0 within each prompt and continue through the generated tokens,
unless `position_ids` gives each row's ids (`evaluation.positions`: drawn as in training).

Positional encodings that read text structure need it for generated tokens too: pass the
prompts' `features` (digit_index / significance, right-padded like the prompts) and a
`next_features` rule that derives a new token's features from the previous token's and the
new token id. `DigitRuns` is that rule for Abacus digit indices when numbers are runs of
number tokens (formats without index hints); coupled positions (significance) depend on the
answer format and need the text layer's rule.

Shapes are fixed (max_new_tokens), decoding stops early once every row has emitted EOS, and
everything after a row's EOS is pad. Greedy when temperature == 0, otherwise sampling with
temperature and nucleus (top-p) filtering (the paper used 0.6 / 0.9); temperature and top_p
are traced, so changing them does not recompile. Recompilation happens only for new shapes, a
new model structure, new eos/pad ids or a new `next_features`: pass it as a long-lived
(hashable) object, not a fresh lambda per call.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

Features = dict[str, jax.Array]
FeatureRule = Callable[[Features, jax.Array], Features]


@dataclasses.dataclass(frozen=True)
class DigitRuns:
  """Abacus digit_index of a generated token: previous index + 1 if it is a number token
  (the previous token's index is 0 when that was no number token), else 0."""
  number_tokens: tuple[bool, ...]  # per token id: is it a number (digit) token

  @classmethod
  def from_table(cls, digit_token_table: np.ndarray) -> DigitRuns:
    """From the embeddings' digit table (int32[V, k_max], -1 = no digit at that place)."""
    return cls(tuple(bool(x) for x in (np.asarray(digit_token_table) >= 0).any(axis=1)))

  def __call__(self, previous: Features, token: jax.Array) -> Features:
    is_number = jnp.asarray(self.number_tokens)[token]
    return {"digit_index": jnp.where(is_number, previous["digit_index"] + 1, 0)}


def generate(model: nnx.Module | tuple[nnx.GraphDef, nnx.State], prompts, prompt_lengths, *,
             max_new_tokens: int, eos_id: int, pad_id: int, rng: jax.Array | None = None,
             temperature: float = 0.0, top_p: float = 1.0,
             features: Mapping[str, np.ndarray] | None = None,
             next_features: FeatureRule | None = None, buffer: int | None = None,
             position_ids: np.ndarray | jax.Array | None = None,
             trim: bool = True) -> jax.Array:
  """int32[B, max_new_tokens]: the tokens generated after each prompt, pad after EOS.

  model: a Transformer or its (graphdef, state) from nnx.split.
  prompts: int32[B, P], right-padded; prompt_lengths: int32[B], each >= 1.
  rng: required when temperature > 0.
  features: {name: int32[B, P]} per-token inputs the model's PE reads, for the prompts.
  next_features: (previous token's features {name: int32[B]}, new token int32[B]) -> the new
    token's features, same names; required with features.
  buffer: slots for generated tokens, >= max_new_tokens (default: the power of two above it);
    part of the compiled program's shape, like the prompts' width.
  position_ids: int32[B, P + buffer], the position input of each row's j-th token (its prompt's
    j-th, then generated token j - length); default j.
  trim: False returns the whole output buffer, int32[B, buffer], pad past max_new_tokens:
    cutting it to max_new_tokens on the device compiles a small program for every new length,
    which a caller that reads the rows on the host can do without.
  """
  args, static = _arguments(model, prompts, prompt_lengths, max_new_tokens=max_new_tokens,
                            eos_id=eos_id, pad_id=pad_id, rng=rng, temperature=temperature,
                            top_p=top_p, features=features, next_features=next_features,
                            buffer=buffer, position_ids=position_ids)
  out = _generate(*args, **static)
  return out[:, :max_new_tokens] if trim else out


def precompile(model, prompts, prompt_lengths, **options) -> None:
  """Compiles, without running it, the program that `generate` with the same arguments runs
  (same shapes, shardings and static options), so that its call finds it compiled: several
  programs can compile at once, in threads, ahead of the calls."""
  args, static = _arguments(model, prompts, prompt_lengths, **options)
  _generate.lower(*args, **static).compile()


def _arguments(model, prompts, prompt_lengths, *, max_new_tokens: int, eos_id: int, pad_id: int,
               rng: jax.Array | None = None, temperature: float = 0.0, top_p: float = 1.0,
               features: Mapping[str, np.ndarray] | None = None,
               next_features: FeatureRule | None = None,
               buffer: int | None = None,
               position_ids: np.ndarray | jax.Array | None = None) -> tuple[tuple, dict]:
  """`_generate`'s arguments and static options for `generate`'s, checked."""
  if isinstance(model, nnx.Module):
    graphdef, state = nnx.split(model)
  else:
    graphdef, state = model
    model = nnx.merge(graphdef, state)
  missing = sorted(model.posenc.inputs - set(features or {}))
  if missing:
    raise ValueError(f"posenc {model.posenc.name!r} reads {missing} of every token: pass "
                     "features= for the prompts and next_features= to continue them "
                     "(DigitRuns for Abacus digit indices)")
  if temperature < 0:
    raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
  if temperature > 0 and rng is None:
    raise ValueError("sampling (temperature > 0) needs rng=")
  if not 0 < top_p <= 1:
    raise ValueError(f"top_p must be in (0, 1], got {top_p}")
  features = {k: jnp.asarray(v, jnp.int32) for k, v in (features or {}).items()}
  if features and next_features is None:
    raise ValueError(f"features {sorted(features)} of the prompts are given but not how to "
                     "continue them: pass next_features= (e.g. DigitRuns for Abacus)")
  rng = jax.random.key(0) if rng is None else rng
  # The output buffer is a static shape and the loop stops at max_new_tokens (a traced bound),
  # so budgets that differ by a few tokens share one compiled program.
  buffer = power_of_two(max_new_tokens) if buffer is None else buffer
  if buffer < max_new_tokens:
    raise ValueError(f"buffer={buffer} holds fewer than max_new_tokens={max_new_tokens}")
  shape = (np.shape(prompts)[0], np.shape(prompts)[1] + buffer)
  if position_ids is not None and tuple(np.shape(position_ids)) != shape:
    raise ValueError(f"position_ids must have one id per prompt and output slot, shape {shape}, "
                     f"got {tuple(np.shape(position_ids))}")
  args = (graphdef, state, jnp.asarray(prompts, jnp.int32),
          jnp.asarray(prompt_lengths, jnp.int32), features, rng, jnp.float32(temperature),
          jnp.float32(top_p), jnp.int32(max_new_tokens),
          None if position_ids is None else jnp.asarray(position_ids, jnp.int32))
  static = dict(greedy=temperature == 0, buffer=buffer, eos_id=eos_id, pad_id=pad_id,
                next_features=next_features)
  return args, static


def power_of_two(n: int, least: int = 8) -> int:
  """The smallest power of two >= max(n, least): shapes bucketed so that few programs compile."""
  return max(least, 1 << (max(n, 1) - 1).bit_length())


def sample_token(logits: jax.Array, key: jax.Array, temperature: jax.Array | float,
                 top_p: jax.Array | float) -> jax.Array:
  """int32[B] from float32[B, V] by sampling at a temperature > 0 within the top-p nucleus."""
  logits = logits / temperature

  def nucleus(logits):
    ordered = jnp.sort(logits, axis=-1)[:, ::-1]
    probs = jax.nn.softmax(ordered, axis=-1)
    # Keep the smallest prefix whose mass reaches top_p (the first token always).
    keep = jnp.cumsum(probs, axis=-1) - probs < top_p
    cutoff = jnp.min(jnp.where(keep, ordered, jnp.inf), axis=-1, keepdims=True)
    return jnp.where(logits < cutoff, -jnp.inf, logits)

  logits = jax.lax.cond(top_p < 1, nucleus, lambda x: x, logits)
  return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


@functools.partial(jax.jit, static_argnames=("graphdef", "greedy", "buffer", "eos_id",
                                             "pad_id", "next_features"))
def _generate(graphdef, state, prompts, lengths, features, rng, temperature, top_p,
              max_new_tokens, position_ids, *, greedy, buffer, eos_id, pad_id, next_features):
  model = nnx.merge(graphdef, state)
  batch, width = prompts.shape
  source = jnp.arange(width)[None, :] - (width - lengths)[:, None]   # left-aligning gather
  valid = source >= 0

  def left_align(a, fill):
    return jnp.where(valid, jnp.take_along_axis(a, jnp.maximum(source, 0), axis=1), fill)

  def position(index):  # int32[B, n] ids of the rows' tokens number `index` (int32[B, n])
    return index if position_ids is None else jnp.take_along_axis(position_ids, index, axis=1)

  extras = {k: left_align(v, 0) for k, v in features.items()}
  cache = model.init_cache(batch, width + buffer)
  logits, cache = model.extend(cache, left_align(prompts, pad_id),
                               positions=position(jnp.maximum(source, 0)),
                               segment_ids=valid.astype(jnp.int32), last_only=True, **extras)
  ones = jnp.ones((batch, 1), jnp.int32)

  def step(carry):
    i, out, logits, cache, done, previous, rng = carry
    rng, key = jax.random.split(rng)
    token = (jnp.argmax(logits, axis=-1).astype(jnp.int32) if greedy
             else sample_token(logits, key, temperature, top_p))
    token = jnp.where(done, pad_id, token)
    out = out.at[:, i].set(token)
    done = done | (token == eos_id)
    current = next_features(previous, token) if next_features is not None else {}
    logits, cache = nnx.merge(graphdef, state).extend(
        cache, token[:, None], positions=position((lengths + i)[:, None]), segment_ids=ones,
        **{k: v[:, None] for k, v in current.items()})
    return i + 1, out, logits[:, 0], cache, done, current, rng

  def not_finished(carry):
    i, *_, done, _, _ = carry
    return (i < max_new_tokens) & ~jnp.all(done)

  carry = (jnp.zeros((), jnp.int32), jnp.full((batch, buffer), pad_id, jnp.int32),
           logits[:, 0], cache, jnp.zeros((batch,), bool),
           {k: v[:, -1] for k, v in extras.items()}, rng)
  return jax.lax.while_loop(not_finished, step, carry)[1]
