"""LoRA: a no-op at start, only adapters train, merging keeps the function."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from nupa_jax import models
from nupa_jax.models import lora
from nupa_jax.models.layers import Dense
import model_testing
from model_testing import VOCAB, tiny

TOKENS = np.random.default_rng(0).integers(1, VOCAB, (2, 9)).astype(np.int32)
TARGETS = ("q", "o", "down")   # one shape family each: fewer compiles than all seven


def _adapted(dropout=0.0, targets=TARGETS):
  model = model_testing.build(tiny("rope"))
  before = model_testing.forward(model, TOKENS)
  lora.apply(model, rank=4, alpha=8.0, dropout=dropout, targets=targets, rngs=nnx.Rngs(1))
  return model, before


def test_zero_initialised_adapters_leave_outputs_unchanged_and_have_layer_axes():
  model, before = _adapted()
  np.testing.assert_array_equal(model_testing.forward(model, TOKENS), before)
  adapters = nnx.state(model, lora.LoRAParam)
  q = adapters["layers"]["attn"]["q"]["lora"]
  assert q["a"].shape == (2, 128, 4) and q["b"].shape == (2, 4, 4, 32)   # [layers, ...]
  assert q["b"].get_metadata()["out_sharding"] == ("layers", None, "heads", "head_dim")
  o = adapters["layers"]["attn"]["o"]["lora"]
  assert o["a"].shape == (2, 4, 32, 4) and o["b"].shape == (2, 4, 128)
  assert len(jax.tree.leaves(adapters)) == 2 * len(TARGETS)


def test_only_adapters_train_and_merging_keeps_the_function():
  model, _ = _adapted()
  base = jax.tree.map(np.asarray, nnx.state(model, nnx.Param))
  optimizer = nnx.Optimizer(model, optax.sgd(0.5), wrt=lora.LoRAParam)
  graphdef, state = nnx.split((model, optimizer))

  @jax.jit
  def train_step(state):
    model, optimizer = nnx.merge(graphdef, state)
    loss = lambda m: jnp.mean(m(TOKENS)[..., 0] ** 2)
    grads = nnx.grad(loss, argnums=nnx.DiffState(0, lora.LoRAParam))(model)
    optimizer.update(model, grads)
    return nnx.state((model, optimizer))

  model, _ = nnx.merge(graphdef, train_step(state))
  for a, b in zip(jax.tree.leaves(base), jax.tree.leaves(nnx.state(model, nnx.Param))):
    np.testing.assert_array_equal(a, b)
  trained = nnx.state(model, lora.LoRAParam)
  assert np.abs(trained["layers"]["mlp"]["down"]["lora"]["b"][...]).max() > 0
  adapted = model_testing.forward(model, TOKENS)
  assert not np.allclose(adapted, model_testing.forward(model_testing.build(tiny("rope")),
                                                        TOKENS))
  lora.merge(model)
  assert not jax.tree.leaves(nnx.state(model, lora.LoRAParam))
  np.testing.assert_allclose(model_testing.forward(model, TOKENS), adapted, atol=1e-5)


def test_dropout_draws_from_rng_and_is_off_when_deterministic():
  config = models.resolve(tiny("rope"), VOCAB)
  dense = Dense((8,), (2, 4), ("embed", "heads", "head_dim"), config, rngs=nnx.Rngs(0))
  dense.lora = lora.LoRA(dense, rank=2, alpha=4.0, dropout=0.5, rngs=nnx.Rngs(1))
  dense.lora.b[...] = jnp.full(dense.lora.b.shape, 0.05)   # B starts at zero: make it matter
  x = jnp.ones((3, 8))
  plain = x @ dense.kernel[...].reshape(8, 8)
  update = (x @ dense.lora.a[...]) @ dense.lora.b[...].reshape(2, 8) * 2.0    # alpha / rank
  np.testing.assert_allclose(dense(x).reshape(3, 8), plain + update, rtol=1e-5)
  one, two = dense(x, rng=jax.random.key(0)), dense(x, rng=jax.random.key(1))
  assert not np.allclose(one, two)
  model = nnx.eval_shape(lambda: model_testing.build(tiny("alibi")))
  assert not model.requires_rng()
  lora.apply(model, rank=4, alpha=2.0, dropout=0.1, targets=TARGETS, rngs=nnx.Rngs(0))
  assert model.requires_rng()
  with pytest.raises(ValueError, match="needs rng="):
    model(TOKENS, deterministic=False)


def test_unknown_targets_are_reported():
  model = nnx.eval_shape(lambda: model_testing.build(tiny("rope")))
  with pytest.raises(ValueError, match="unknown LoRA targets \\['qkv'\\]; known: q, k, v, o"):
    lora.apply(model, rank=2, alpha=2.0, targets=("qkv",), rngs=nnx.Rngs(0))
