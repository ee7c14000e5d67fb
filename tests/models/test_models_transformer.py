"""The decoder: packing, sizes, sharding names, dtypes, a jitted train step, remat, configs."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from nupa_jax import models
from nupa_jax.models import attention, embeddings
import model_testing
from model_testing import VOCAB, tiny

LOGICAL_AXES = {"vocab", "embed", "heads", "kv_heads", "head_dim", "mlp", "layers", None}


@pytest.mark.parametrize("pe", ["rope", "alibi", "fire", "abacus"])
def test_packed_row_equals_its_samples_run_one_by_one(pe):
  model = model_testing.build(tiny(pe))
  rng = np.random.default_rng(0)
  lengths, width = (5, 4, 3), 14
  samples = [rng.integers(1, VOCAB, n) for n in lengths]
  digits = [rng.integers(0, 4, n) for n in lengths]
  tokens, segments, positions, digit_index = (np.zeros((4, width), np.int32) for _ in range(4))
  start = 0
  for s, (sample, d) in enumerate(zip(samples, digits)):
    n = len(sample)
    # Row 0: all samples packed; row s + 1: sample s alone, then padding.
    for row, at in ((0, start), (s + 1, 0)):
      tokens[row, at:at + n], digit_index[row, at:at + n] = sample, d
      segments[row, at:at + n] = s + 1 if row == 0 else 1
      positions[row, at:at + n] = np.arange(n)
    start += n
  logits = np.asarray(model_testing.forward(model, tokens, segment_ids=segments,
                                            positions=positions, digit_index=digit_index))
  start = 0
  for s, n in enumerate(lengths):
    np.testing.assert_allclose(logits[0, start:start + n], logits[s + 1, :n], atol=2e-5)
    start += n


@pytest.mark.parametrize("preset, expected", [("1.3m", 1.3e6), ("100m", 109e6),
                                              ("0.9b", 873e6), ("3b", 2.94e9)])
def test_preset_parameter_counts(preset, expected):
  assert models.count_params({"preset": preset}, 32) == pytest.approx(expected, rel=0.02)


def test_every_parameter_has_logical_axis_names():
  table = np.full((VOCAB, 2), -1, np.int32)
  table[4:14, 0] = np.arange(10)
  model = nnx.eval_shape(lambda: model_testing.build(
      tiny("fire", digit_embeddings=True), digit_token_table=table))
  leaves = jax.tree_util.tree_leaves_with_path(nnx.state(model, nnx.Param),
                                               is_leaf=lambda x: isinstance(x, nnx.Variable))
  assert len(leaves) > 15
  for path, variable in leaves:
    names = variable.get_metadata()["out_sharding"]
    assert len(names) == variable.ndim and set(names) <= LOGICAL_AXES, (path, names)
    in_layers = any(getattr(p, "key", None) == "layers" for p in path)
    assert in_layers == (names[:1] == ("layers",)), path


def test_100m_computes_in_bfloat16_with_float32_params_and_logits():
  model = nnx.eval_shape(lambda: models.build({"preset": "100m"}, 32, rngs=nnx.Rngs(0)))
  graphdef, state = nnx.split(model)
  assert {x.dtype for x in jax.tree.leaves(nnx.state(model, nnx.Param))} == {np.dtype('float32')}
  tokens = jax.ShapeDtypeStruct((2, 16), jnp.int32)
  forward = lambda state, tokens: nnx.merge(graphdef, state)(tokens)
  assert jax.eval_shape(forward, state, tokens).dtype == jnp.float32
  jaxpr = str(jax.make_jaxpr(forward)(state, tokens))
  assert "dot_general" in jaxpr and "bf16" in jaxpr


def _loss(model, batch, rng):
  logits = model(batch["inputs"], segment_ids=batch["segment_ids"],
                 positions=batch["positions"], deterministic=False, rng=rng)
  ce = optax.softmax_cross_entropy_with_integer_labels(logits, batch["targets"])
  return jnp.sum(ce * batch["loss_mask"]) / jnp.sum(batch["loss_mask"])


def _batch():
  rng = np.random.default_rng(1)
  inputs = rng.integers(1, VOCAB, (4, 12)).astype(np.int32)
  segments = np.repeat(np.array([[1] * 7 + [2] * 5]), 4, axis=0).astype(np.int32)
  positions = np.concatenate([np.arange(7), np.arange(5)])[None].repeat(4, 0).astype(np.int32)
  return {"inputs": inputs, "targets": np.roll(inputs, -1, axis=1), "segment_ids": segments,
          "positions": positions, "loss_mask": (positions > 2).astype(np.float32)}


def test_jitted_train_step_of_tiny_preset_has_finite_gradients_and_learns():
  model = model_testing.build(tiny({"name": "rope", "random_positions": 64}))
  optimizer = nnx.Optimizer(model, optax.adamw(3e-3), wrt=nnx.Param)
  graphdef, state = nnx.split((model, optimizer))

  @jax.jit
  def train_step(state, batch, rng):
    model, optimizer = nnx.merge(graphdef, state)
    loss, grads = nnx.value_and_grad(_loss)(model, batch, rng)
    optimizer.update(model, grads)
    return nnx.state((model, optimizer)), loss, grads

  batch, losses = _batch(), []
  for step in range(8):
    state, loss, grads = train_step(state, batch, jax.random.key(step))
    losses.append(float(loss))
    if step == 0:
      for path, g in jax.tree_util.tree_leaves_with_path(grads):
        assert np.isfinite(g).all() and np.abs(g).max() > 0, path
  assert losses[-1] < losses[0] - 0.1


@pytest.mark.slow
def test_remat_gives_the_same_gradients():
  batch = _batch()
  grads = {}
  for remat in ("none", "full"):
    model = model_testing.build(tiny("alibi", remat=remat))
    graphdef, state = nnx.split(model)
    loss = lambda state: _loss(nnx.merge(graphdef, state), batch, None)
    grads[remat] = jax.jit(jax.grad(loss))(state)
  for a, b in zip(jax.tree.leaves(grads["none"]), jax.tree.leaves(grads["full"])):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_remat_lowers_the_compiled_memory_of_the_backward_pass():
  """Under the default `scan_unroll` (all layers unrolled) too: unrolled, XLA would schedule the
  recomputation as early as the forward pass and keep every activation."""
  def temp_mib(remat):
    model = model_testing.build(tiny("rope", num_layers=4, hidden=64, heads=4, kv_heads=2,
                                     mlp=128, max_len=128, dtype="float32", remat=remat,
                                     scan_unroll=True))
    graphdef, state = nnx.split(model)
    tokens = jnp.zeros((4, 128), jnp.int32)
    loss = lambda state: jnp.mean(nnx.merge(graphdef, state)(tokens) ** 2)
    compiled = jax.jit(jax.grad(loss)).lower(state).compile()
    return compiled.memory_analysis().temp_size_in_bytes / 2**20
  assert temp_mib("full") < 0.5 * temp_mib("none")


def test_digit_embeddings_compose_number_tokens_from_places():
  table = np.full((VOCAB, 3), -1, np.int32)
  table[4:14, 0] = np.arange(10)          # "0".."9"
  table[14] = [5, 0, -1]                  # "05"
  table[15] = [5, 4, -1]                  # "45"
  table[16] = [5, 0, 0]                   # "005"
  config = models.resolve(tiny("nope", digit_embeddings=True, tie_embeddings=True), VOCAB)
  embed = embeddings.build(config, table, rngs=nnx.Rngs(0))
  places, rows = np.asarray(embed.digit_table[...]), np.asarray(embed.effective_table())
  absent = embeddings.ABSENT
  np.testing.assert_allclose(rows[9], places[0, 5] + places[1, absent] + places[2, absent])
  np.testing.assert_allclose(rows[14], places[0, 5] + places[1, 0] + places[2, absent])
  np.testing.assert_allclose(rows[15], places[0, 5] + places[1, 4] + places[2, absent])
  np.testing.assert_allclose(rows[16], places[0, 5] + places[1, 0] + places[2, 0])
  np.testing.assert_allclose(rows[:4], np.asarray(embed.table[...])[:4])
  assert len({tuple(rows[i]) for i in (9, 14, 16)}) == 3           # "5", "05", "005" differ
  grads = nnx.grad(lambda e: e(jnp.array([15, 2])).sum())(embed)
  assert np.abs(grads["digit_table"][...][:, [4, 5]]).sum() > 0
  assert np.abs(grads["table"][...][15]).sum() == 0
  tied = models.count_params(tiny("nope", digit_embeddings=True, tie_embeddings=True), VOCAB,
                             digit_token_table=table)
  assert models.count_params(tiny("nope"), VOCAB) - tied == 128 * VOCAB - 3 * 11 * 128


@pytest.mark.parametrize("config, message", [
    (tiny(typo=1), "unknown model config fields \\['typo'\\]"),
    ({"preset": "7b"}, "unknown model preset '7b'; known: tiny, 1.3m, 100m, 0.9b, 3b"),
    (tiny(attention_impl="cudnn"), "needs dtype bfloat16 or float16"),
    (tiny("fire", attention_impl="cudnn", dtype="bfloat16"), "use attention_impl='xla'"),
    (tiny(attention_impl="flash"), "unknown attention_impl 'flash'; known: auto, cudnn, xla"),
    (tiny(kv_heads=3), "must be a multiple of kv_heads=3"),
    (tiny(digit_embeddings=True), "needs digit_token_table"),
    (tiny(remat="some"), "unknown remat 'some'; known: dots, full, none"),
])
def test_config_errors_name_the_fix(config, message):
  with pytest.raises(ValueError, match=message):
    nnx.eval_shape(lambda: model_testing.build(config))


def test_auto_attention_takes_cudnn_only_on_gpu_where_it_applies(monkeypatch):
  choose = lambda config, learned=False: attention.implementation(models.resolve(config, 32),
                                                                   learned)
  assert choose({"preset": "100m"}) == "xla"                     # this CPU
  monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
  assert choose({"preset": "100m"}) == "cudnn"
  assert choose({"preset": "100m"}, learned=True) == "xla"       # FIRE's bias
  assert choose({"preset": "tiny"}) == "xla"                     # float32
  assert choose({"preset": "100m", "attention_impl": "xla"}) == "xla"


def test_missing_position_features_and_rng_are_reported():
  model = nnx.eval_shape(lambda: model_testing.build(tiny("abacus")))
  tokens = jnp.zeros((1, 4), jnp.int32)
  with pytest.raises(ValueError, match="'abacus' needs digit_index="):
    model(tokens)
  with pytest.raises(ValueError, match="deterministic=False needs rng="):
    model(tokens, digit_index=tokens, deterministic=False)
