"""The speed knobs keep the numbers: fused q/k/v and gate/up projections and split layer
parameters give the default path's logits and gradients (RoPE, ALiBi, NoPE, q/k/v biases,
LoRA adapters, the KV-cache path), so does attention by cuDNN segments instead of a mask (its
layout, and the model's path with the kernel written out in XLA), so does attention within a
band over the samples' positions, and the rotary embedding equals rotate_half written out."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nupa_jax.models import attention, lora, posenc, transformer
import model_testing
from model_testing import QUICK, VOCAB, tiny

KNOBS = {"fused": {"fused_projections": True}, "split": {"split_layers": True},
         "both": {"fused_projections": True, "split_layers": True}}


def _packed_batch(seed: int = 0):
  """Two rows of 3 and 2 packed samples, the second row ending in padding."""
  rng = np.random.default_rng(seed)
  segments = np.array([[1] * 5 + [2] * 4 + [3] * 3, [1] * 6 + [2] * 4 + [0] * 2], np.int32)
  positions = np.zeros_like(segments)
  for row in range(2):
    for s in set(segments[row]) - {0}:
      at = segments[row] == s
      positions[row, at] = np.arange(at.sum())
  tokens = rng.integers(1, VOCAB, segments.shape).astype(np.int32)
  weights = rng.normal(size=segments.shape + (VOCAB,)).astype(np.float32)
  return tokens, {"segment_ids": segments, "positions": positions}, weights


def _logits_and_grads(model, tokens, features, weights):
  """Logits and the gradient of sum(logits * weights) over every parameter."""
  graphdef, state = nnx.split(model)
  return _logits_and_grads_jit(graphdef, state, tokens, features, weights)


@functools.partial(jax.jit, static_argnums=0, compiler_options=QUICK)
def _logits_and_grads_jit(graphdef, state, tokens, features, weights):
  def loss(state):
    logits = nnx.merge(graphdef, state)(tokens, **features)
    return jnp.sum(logits * weights), logits
  grads, logits = jax.grad(loss, has_aux=True)(state)
  return logits, grads


def _assert_trees_close(got, expected, tolerance=1e-5, floor=0.0):
  """Leaf by leaf, to `tolerance` of the leaf's largest entry (at least `floor`, for leaves
  whose gradient is zero but for rounding): float32 sums taken in another order (one matmul
  instead of three) differ in their last bits, a wrong path by O(1)."""
  got_leaves, expected_leaves = jax.tree.leaves(got), jax.tree.leaves(expected)
  assert len(got_leaves) == len(expected_leaves) > 0
  for a, b in zip(got_leaves, expected_leaves):
    b = np.asarray(b)
    np.testing.assert_allclose(np.asarray(a), b, rtol=0,
                               atol=tolerance * max(np.abs(b).max(), floor))


@pytest.mark.parametrize("knob", sorted(KNOBS))
@pytest.mark.parametrize("pe", ["rope", "alibi", "nope"])
def test_knob_gives_the_default_logits_and_gradients(pe, knob):
  tokens, features, weights = _packed_batch()
  default = model_testing.build(tiny(pe))
  variant = model_testing.build(tiny(pe, **KNOBS[knob]))
  _assert_trees_close(nnx.state(variant), nnx.state(default), tolerance=0)  # same init
  logits, grads = _logits_and_grads(default, tokens, features, weights)
  got_logits, got_grads = _logits_and_grads(variant, tokens, features, weights)
  assert float(jnp.abs(logits).max()) > 0.1 and len(jax.tree.leaves(grads)) > 10
  _assert_trees_close((got_logits, got_grads), (logits, grads))


def _with_biases_and_adapters(config):
  """A tiny Qwen-like model (q/k/v biases) with LoRA on every projection, none of them zero."""
  model = model_testing.build(config)
  lora.apply(model, rank=2, alpha=4.0, targets=lora.TARGETS, rngs=nnx.Rngs(1))
  # The noise is drawn and added on the host: as jax operations each leaf shape compiles its own.
  noise = np.random.default_rng(2)
  nnx.update(model, jax.tree.map(
      lambda a: jnp.asarray(np.asarray(a) + 0.05 * noise.normal(size=a.shape), a.dtype),
      nnx.state(model)))
  return model


def test_fused_projections_add_each_projections_bias_and_lora_update():
  tokens, features, weights = _packed_batch(1)
  default = _with_biases_and_adapters(tiny("rope", qkv_bias=True))
  fused = _with_biases_and_adapters(tiny("rope", qkv_bias=True, fused_projections=True))
  logits, grads = _logits_and_grads(default, tokens, features, weights)
  got_logits, got_grads = _logits_and_grads(fused, tokens, features, weights)
  _assert_trees_close((got_logits, got_grads), (logits, grads))


@nnx.jit
def _prompt_then_one_token(model, tokens, features):
  """The logits of a prompt extended into an empty cache, then of one decoding step (its last
  token fed again) through that cache."""
  prompt, cache = model.extend(model.init_cache(2, tokens.shape[1] + 1), tokens, **features)
  last = {k: v[:, -1:] for k, v in features.items()}
  step, _ = model.extend(cache, tokens[:, -1:], last_only=True,
                         positions=last["positions"] + 1, segment_ids=last["segment_ids"])
  return prompt, step


def test_fused_projections_decode_as_the_default_through_the_kv_cache():
  tokens, features, _ = _packed_batch(2)
  outputs = []
  for knobs in ({}, KNOBS["both"]):
    model = model_testing.build(tiny("rope", **knobs))
    outputs.append(_prompt_then_one_token(model, jnp.asarray(tokens), features))
  _assert_trees_close(outputs[1], outputs[0])


def test_rotary_equals_rotate_half_written_out():
  x = np.random.default_rng(3).normal(size=(2, 3, 4, 8)).astype(np.float32)
  angles = np.random.default_rng(4).uniform(0, 50, (2, 3, 4)).astype(np.float32)
  cos, sin = np.cos(np.concatenate([angles] * 2, -1)), np.sin(np.concatenate([angles] * 2, -1))
  rotate_half = np.concatenate([-x[..., 4:], x[..., :4]], axis=-1)
  expected = x * cos[:, :, None] + rotate_half * sin[:, :, None]
  np.testing.assert_allclose(posenc.apply_rotary(jnp.asarray(x), cos, sin), expected,
                             rtol=1e-6, atol=1e-6)


def test_fused_projections_run_apart_on_a_tensor_parallel_mesh():
  """Kernels split over `tensor` on their output axes would be regathered to be joined."""
  from jax.sharding import AbstractMesh, AxisType
  from nupa_jax import sharding
  from nupa_jax.models import layers, presets
  config = presets.resolve({"preset": "tiny", "fused_projections": True}, VOCAB)
  mlp = layers.MLP(config, rngs=nnx.Rngs(0))
  x = jnp.ones((2, 3, config.hidden))

  def primitives(tensor):
    mesh = AbstractMesh((1, 1, tensor), ("data", "fsdp", "tensor"),
                        axis_types=(AxisType.Auto,) * 3)
    with jax.sharding.use_abstract_mesh(mesh):
      assert sharding.tensor_parallel() == (tensor > 1)
      return {e.primitive.name for e in jax.make_jaxpr(mlp)(x).eqns}

  assert "concatenate" in primitives(1)
  assert "concatenate" not in primitives(2)


def _segments_of_layout(lengths, offsets, length):
  """cuDNN's packed layout written out: bool[B, T, T] whether two positions share a listed
  segment, and int[B, T] how many listed segments hold each position."""
  t = jnp.arange(length)
  starts, lengths = offsets[:, :-1, None], lengths[:, :, None]
  inside = (starts <= t) & (t < starts + lengths) & (lengths > 0)  # [B, slots, T]
  segment_of = jnp.argmax(inside, axis=1)
  return segment_of[:, :, None] == segment_of[:, None, :], inside.sum(1)


def test_segment_layout_lists_each_rows_samples_then_its_padding():
  _, features, _ = _packed_batch()
  segments = features["segment_ids"]
  lengths, offsets = attention.segment_layout(jnp.asarray(segments), 4)
  np.testing.assert_array_equal(lengths, [[5, 4, 3, -1], [6, 4, -1, 2]])
  np.testing.assert_array_equal(offsets, [[0, 5, 9, -1, -1], [0, 6, -1, 10, -1]])
  same, holders = _segments_of_layout(lengths, offsets, segments.shape[1])
  np.testing.assert_array_equal(holders, 1)  # every position in exactly one segment
  np.testing.assert_array_equal(same, attention.training_mask(jnp.asarray(segments))[:, 0])
  with pytest.raises(ValueError, match="cudnn_segments=4 must exceed the 4 samples a row "):
    attention.check_segments(4, 4)
  attention.check_segments(5, 4)
  attention.check_segments(0, 4)


def _attention_by_layout(q, k, v, lengths, offsets):
  """cuDNN's packed layout written out in XLA: causal attention within each listed segment."""
  same, _ = _segments_of_layout(lengths, offsets, q.shape[1])
  return jax.nn.dot_product_attention(q, k, v, mask=same[:, None], is_causal=True,
                                      implementation="xla")


def test_training_forward_by_segments_gives_the_masks_logits_and_gradients(monkeypatch):
  """The model's path by segments (cuDNN's kernel replaced by `_attention_by_layout`, as CPUs
  have no cuDNN) against the mask: a full row and a row with an empty slot and padding."""
  tokens, features, weights = _packed_batch(3)
  expected = _logits_and_grads(model_testing.build(tiny("rope")), tokens, features, weights)
  monkeypatch.setattr(transformer, "implementation", lambda *_: "cudnn")
  monkeypatch.setattr(transformer, "packed_layout_available", lambda: True)
  monkeypatch.setattr(attention, "_cudnn_by_segments", _attention_by_layout)
  got = _logits_and_grads(model_testing.build(tiny("rope", cudnn_segments=4)), tokens,
                          features, weights)
  _assert_trees_close(got, expected)


def _band_batch(lengths=([9, 3, 9, 7, 9, 3], [2, 9, 9, 9, 5])):
  """Rows of 40 positions holding samples of `lengths` positions (by default up to 9, several
  across a boundary of the 8-position blocks that `attention_span=9` cuts), the second row
  ending in padding; the loss weights are zero on the padding, which no loss reads."""
  rng = np.random.default_rng(4)
  segments = np.zeros((2, 40), np.int32)
  positions = np.zeros_like(segments)
  for row, sizes in enumerate(lengths):
    starts = np.cumsum([0, *sizes])
    for s, (a, b) in enumerate(zip(starts[:-1], starts[1:]), start=1):
      segments[row, a:b] = s
      positions[row, a:b] = np.arange(b - a)
  tokens = rng.integers(1, VOCAB, segments.shape).astype(np.int32)
  weights = rng.normal(size=segments.shape + (VOCAB,)).astype(np.float32)
  weights *= (segments > 0)[..., None]
  return tokens, {"segment_ids": segments, "positions": positions}, weights


def test_band_blocks_hold_the_span():
  assert [attention.band_block(n) for n in (1, 8, 9, 10, 17, 27, 33)] == [8, 8, 8, 16, 16, 32, 32]


@pytest.mark.parametrize("pe", ["rope", "fire"])
def test_band_gives_the_masks_logits_and_gradients_on_samples(pe):
  """Attention within the band of `attention_span=9` against the whole-row mask, without a
  bias (RoPE) and with the PE's bias taken on the band's blocks (FIRE): the same logits at every
  sample position and the same gradients (FIRE's output bias, which softmax cancels, has a
  gradient of rounding noise only)."""
  tokens, features, weights = _band_batch()
  logits, grads = _logits_and_grads(model_testing.build(tiny(pe)), tokens, features, weights)
  got_logits, got_grads = _logits_and_grads(model_testing.build(tiny(pe, attention_span=9)),
                                            tokens, features, weights)
  on_samples = features["segment_ids"] > 0
  _assert_trees_close((np.asarray(got_logits)[on_samples], got_grads),
                      (np.asarray(logits)[on_samples], grads), floor=1.0)


def test_band_shorter_than_a_sample_changes_its_logits():
  """A sample of 12 positions starting one position before a block boundary, through the band
  of `attention_span=9` (which the data pipeline refuses), loses pairs: the comparison above
  can fail."""
  tokens, features, _ = _band_batch(([7, 12, 9, 9, 3], [2, 9, 9, 9, 5]))
  expected = model_testing.forward(model_testing.build(tiny("nope")), tokens, **features)
  got = model_testing.forward(model_testing.build(tiny("nope", attention_span=9)), tokens,
                              **features)
  on_samples = features["segment_ids"] > 0
  assert np.abs(np.asarray(got - expected)[on_samples]).max() > 1e-3


def test_band_is_checked_against_the_other_attention_settings():
  with pytest.raises(ValueError, match="attention_span must be >= 0"):
    model_testing.build(tiny("rope", attention_span=-1))
  with pytest.raises(ValueError, match="set one of them to 0"):
    model_testing.build(tiny("rope", attention_span=9, cudnn_segments=4))
