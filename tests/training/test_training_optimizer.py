"""Learning-rate schedule, decoupled weight decay on matrices only, gradient clipping."""
import math

import jax

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from configs import common
from nupa_jax.training import optimizer


def train_config(**overrides):
  c = common.base("tiny").train
  c.update(overrides)
  return c


def test_warmup_then_cosine_matches_the_formula():
  c = train_config(steps=1100, warmup_steps=100, learning_rate=2e-3, end_lr_ratio=0.1)
  lr = optimizer.schedule(c)
  for step in (0, 50, 100):
    assert float(lr(step)) == pytest.approx(2e-3 * step / 100, rel=1e-5, abs=1e-12)
  for step in (100, 350, 600, 1100):
    progress = (step - 100) / 1000
    cosine = 0.5 * (1 + math.cos(math.pi * progress))
    expected = 2e-3 * (0.1 + 0.9 * cosine)
    assert float(lr(step)) == pytest.approx(expected, rel=1e-5)


def test_paper_schedule_has_no_warmup_and_unknown_names_are_listed():
  c = common.base("100m").train
  assert float(optimizer.schedule(c)(0)) == pytest.approx(5e-5)
  with pytest.raises(ValueError, match="unknown learning-rate schedule 'cos'; known: constant, "
                     "cosine, linear"):
    optimizer.schedule(train_config(schedule="cos"))
  with pytest.raises(ValueError, match="unknown optimizer 'adam'; known: adamw"):
    optimizer.make(train_config(optimizer="adam"))


def test_weight_decay_skips_vectors():
  """With zero gradients Adam's step is zero, so only decoupled decay moves parameters."""
  c = train_config(schedule="constant", warmup_steps=0, learning_rate=1.0, weight_decay=0.1,
                   grad_clip=0.0)
  tx = optimizer.make(c)
  params = {"kernel": jnp.ones((2, 3)), "scale": jnp.ones((3,))}
  updates, _ = tx.update(optax.tree.zeros_like(params), tx.init(params), params)
  new = optax.apply_updates(params, updates)
  np.testing.assert_allclose(new["kernel"], 0.9)
  np.testing.assert_allclose(new["scale"], 1.0)


@pytest.mark.parametrize("clip, expected_norm", [(1.0, 1.0), (0.0, 10.0)])
def test_gradients_are_clipped_by_global_norm(clip, expected_norm):
  """With b1 = b2 = 0 and a huge eps, AdamW's step is g / eps: proportional to the (clipped)
  gradient, so its norm shows the clipping."""
  c = train_config(schedule="constant", warmup_steps=0, learning_rate=1.0, weight_decay=0.0,
                   grad_clip=clip, b1=0.0, b2=0.0, eps=1e6)
  tx = optimizer.make(c)
  params = {"w": jnp.zeros((4,))}
  grads = {"w": jnp.array([6.0, 8.0, 0.0, 0.0])}  # norm 10
  updates, _ = tx.update(grads, tx.init(params), params)
  assert float(optax.tree.norm(updates)) * 1e6 == pytest.approx(expected_norm, rel=1e-3)



def test_weight_decay_skips_stacked_norm_scales_of_the_model():
  """The blocks' parameters carry a leading `layers` axis: a stack of norm scales is 2-D but
  still a set of vectors, which the Transformers trainer does not decay."""
  from flax import nnx
  from nupa_jax.models import transformer
  c = train_config(schedule="constant", warmup_steps=0, learning_rate=1.0, weight_decay=0.1,
                   grad_clip=0.0)
  model = transformer.build({"preset": "tiny"}, 16, rngs=nnx.Rngs(0))
  before = jax.tree.map(np.asarray, nnx.state(model, nnx.Param))
  opt = nnx.Optimizer(model, optimizer.make(c), wrt=nnx.Param)
  opt.update(model, jax.tree.map(jnp.zeros_like, nnx.state(model, nnx.Param)))
  after = nnx.state(model, nnx.Param)
  assert before["layers"]["attn_norm"]["scale"][...].ndim == 2
  for path in (("layers", "attn_norm", "scale"), ("layers", "mlp_norm", "scale"),
               ("norm", "scale")):
    old, new = before, after
    for key in path:
      old, new = old[key], new[key]
    np.testing.assert_allclose(new[...], old[...])
  for path in (("layers", "mlp", "up", "kernel"), ("embed", "table")):
    old, new = before, after
    for key in path:
      old, new = old[key], new[key]
    np.testing.assert_allclose(new[...], 0.9 * old[...], rtol=1e-6)


def test_weight_decay_skips_multi_axis_biases():
  """Qwen2-style q / k / v biases have shape (heads, head_dim): biases all the same."""
  c = train_config(schedule="constant", warmup_steps=0, learning_rate=1.0, weight_decay=0.1,
                   grad_clip=0.0)
  tx = optimizer.make(c)
  params = {"q": {"kernel": jnp.ones((4, 2, 3)), "bias": jnp.ones((2, 3))}}
  updates, _ = tx.update(optax.tree.zeros_like(params), tx.init(params), params)
  new = optax.apply_updates(params, updates)
  np.testing.assert_allclose(new["q"]["kernel"], 0.9)
  np.testing.assert_allclose(new["q"]["bias"], 1.0)


def test_gpu_compiler_settings_reach_only_gpu_compiles():
  from nupa_jax.training.settings import Train
  off = Train(steps=1, batch_size=1, learning_rate=1.0, gpu_triton_gemm=False)
  assert off.compiler_options("gpu") == {"xla_gpu_enable_triton_gemm": False}
  assert off.compiler_options("cpu") == {}
  assert Train(steps=1, batch_size=1, learning_rate=1.0).compiler_options("gpu") == {}
  overlap = Train(steps=1, batch_size=1, learning_rate=1.0, gpu_triton_gemm=False,
                  gpu_overlap_collectives=True)
  assert overlap.compiler_options("gpu") == {"xla_gpu_enable_triton_gemm": False,
                                             "xla_gpu_enable_latency_hiding_scheduler": True}
  assert overlap.compiler_options("cpu") == {}


@pytest.mark.parametrize("size, faster", [("100m", True), ("tiny", False), ("0.9b", False)])
def test_speed_settings_are_on_for_the_size_they_were_measured_on(size, faster):
  c = common.base(size)
  assert c.model.fused_projections == c.model.split_layers == faster
  assert c.train.gpu_triton_gemm == (not faster)
