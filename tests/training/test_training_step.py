"""The loss of the pure steps is the masked token mean; init_from loads another run's model."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nupa_jax import checkpoint
from nupa_jax import data
from nupa_jax import sharding
from nupa_jax.training import optimizer
from nupa_jax.models import state as state_lib
from nupa_jax.training import step as step_lib
from nupa_jax.training import trainer

import training_testing


@pytest.fixture(scope="module")
def setup():
  config = training_testing.micro_config()
  mesh = sharding.make_mesh(config.mesh.shape)
  pipeline = data.Pipeline(config)
  tx = optimizer.make(config.train)
  spec = state_lib.spec(config.model, pipeline.encoder.vocab_size, mesh, config.mesh.rules,
                        tx=tx)
  state = state_lib.initialise(spec, config.model, pipeline.encoder.vocab_size, tx=tx)
  with pipeline.train_iterator(sharding.batch_sharding(mesh)) as it:
    batch = step_lib.device_batch(next(it))
  return config, mesh, spec, state, batch


def test_loss_is_the_mean_cross_entropy_over_answer_tokens(setup):
  _, _, spec, state, batch = setup

  @jax.jit
  def logits_and_loss(state, batch):
    model, _ = nnx.merge(spec.graphdef, state)
    logits = model(batch["inputs"], positions=batch["positions"],
                   segment_ids=batch["segment_ids"])
    return logits, step_lib.loss_sums(model, batch)

  logits, (total, count) = logits_and_loss(state, batch)
  logits = np.asarray(logits, np.float64)
  logits -= logits.max(-1, keepdims=True)
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  targets = np.asarray(batch["targets"])
  nll = -np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
  mask = np.asarray(batch["loss_mask"])
  assert float(count) == mask.sum() > 0
  assert float(total) == pytest.approx(nll[mask].sum(), rel=1e-5)


def test_init_from_starts_from_another_runs_model_with_a_fresh_optimizer(tmp_path, setup):
  _, _, _, state, _ = setup
  source = jax.tree.map(lambda x: x.copy(), state)
  pure = nnx.to_pure_dict(source)
  pure[1]["step"] = jnp.asarray(7, pure[1]["step"].dtype)  # an optimizer that has run
  nnx.replace_by_pure_dict(source, pure)
  ckpt = checkpoint.Checkpointer(tmp_path / "source")
  ckpt.save(7, source, {"data": 7, "samples_seen": 112})
  ckpt.close()
  config = training_testing.micro_config(**{"eval.per_length": 0})
  config.seed = 5  # a fresh initialisation would differ from the source's
  config.init_from = f"{tmp_path / 'source'}:latest"
  started = nnx.to_pure_dict(trainer._Run(config, tmp_path / "new").init_state())
  for a, b in zip(jax.tree.leaves(started[0]), jax.tree.leaves(nnx.to_pure_dict(state)[0])):
    np.testing.assert_array_equal(a, b)
  assert int(started[1]["step"]) == 0
  config.init_from = str(tmp_path / "nothing_here")
  with pytest.raises(trainer.ConfigError, match="config.init_from=.*no checkpoint in"):
    trainer._Run(config, tmp_path / "new").init_state()


def test_microbatches_give_the_update_of_the_whole_batch(setup):
  config, mesh, spec, state, batch = setup
  microbatches = 2
  rows = batch["inputs"].shape[0]
  assert rows % microbatches == 0, rows
  parts = step_lib.microbatches_of(batch, microbatches)
  assert parts["inputs"].shape[:2] == (microbatches, rows // microbatches)
  for r in range(rows):  # row r of the batch is row r // k of microbatch r % k
    np.testing.assert_array_equal(parts["inputs"][r % microbatches, r // microbatches],
                                  batch["inputs"][r])
  out = {}
  for k in (1, microbatches):
    train_step = step_lib.make_train_step(
        spec.graphdef, spec.shardings, sharding.batch_sharding(mesh), sharding.replicated(mesh),
        optimizer.schedule(config.train), microbatches=k)
    new_state, metrics = train_step(jax.tree.map(lambda x: x.copy(), state), batch)
    out[k] = (nnx.to_pure_dict(new_state), metrics)
  (one, one_metrics), (split, split_metrics) = out[1], out[microbatches]
  for key in ("loss", "grad_norm", "answer_tokens", "tokens"):
    assert float(split_metrics[key]) == pytest.approx(float(one_metrics[key]), rel=1e-5), key
  for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(split)):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
  assert any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(nnx.to_pure_dict(state)),
                                                      jax.tree.leaves(one)))  # it did update


def test_microbatches_must_split_each_devices_rows():
  trainer._check_microbatches(4, rows=16, divisor=2)
  with pytest.raises(ValueError, match="microbatches=3 does not divide the 8 rows of each of "
                                       "the 2 batch-axis devices"):
    trainer._check_microbatches(3, rows=16, divisor=2)


def test_the_step_over_the_states_leaves_computes_what_the_step_over_the_state_does(setup):
  """`leaves_of`: the same program, taking and returning the state's leaves."""
  config, mesh, spec, state, batch = setup
  args = (spec.graphdef, spec.shardings, sharding.batch_sharding(mesh),
          sharding.replicated(mesh), optimizer.schedule(config.train))
  over_state = step_lib.make_train_step(*args)
  over_leaves = step_lib.make_train_step(*args, leaves_of=state)
  copy = lambda tree: jax.tree.map(lambda x: x.copy(), tree)  # the steps donate their input
  new_state, metrics = over_state(copy(state), batch)
  new_leaves, leaf_metrics = over_leaves(copy(jax.tree.leaves(state)), batch)
  assert isinstance(new_leaves, list) and len(new_leaves) == len(jax.tree.leaves(state))
  for a, b in zip(jax.tree.leaves(new_state), new_leaves):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert a.sharding == b.sharding
  assert {k: float(v) for k, v in metrics.items()} == {
      k: float(v) for k, v in leaf_metrics.items()}
  assert float(metrics["loss"]) > 0
