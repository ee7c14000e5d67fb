"""Orbax checkpoints: exact round trip, data position, latest-k + best retention, partial
restore of the model alone."""
import jax
import numpy as np
import optax
import pytest
from flax import nnx

from nupa_jax import checkpoint
from nupa_jax import sharding


class Tiny(nnx.Module):
  def __init__(self, rngs: nnx.Rngs):
    self.dense = nnx.Linear(3, 4, rngs=rngs)
    self.scale = nnx.Param(np.arange(4, dtype=np.float32))


def make_state(seed: int):
  model = Tiny(nnx.Rngs(seed))
  optimizer = nnx.Optimizer(model, optax.adam(0.1), wrt=nnx.Param)
  return nnx.split((model, optimizer))


@pytest.fixture(scope="module")
def setup():
  mesh = sharding.make_mesh({"data": -1})
  graphdef, state = make_state(0)
  shardings = sharding.state_shardings(state, mesh, [])
  state = jax.device_put(state, shardings)
  return graphdef, state, shardings, mesh


def arrays(state):
  return [np.asarray(x) for x in jax.tree.leaves(state)]


def test_round_trip_is_exact_and_keeps_meta(tmp_path, setup):
  _, state, shardings, _ = setup
  ckpt = checkpoint.Checkpointer(tmp_path, keep=2)
  ckpt.save(7, state, {"data": 7, "samples_seen": 448})
  ckpt.wait()
  _, other = make_state(1)  # different values, same structure: the restore target
  restored, meta = ckpt.restore(7, other, shardings)
  assert meta == {"data": 7, "samples_seen": 448, "step": 7}
  for a, b in zip(arrays(state), arrays(restored)):
    np.testing.assert_array_equal(a, b)
  assert all(x.sharding == s for x, s in zip(jax.tree.leaves(restored),
                                             jax.tree.leaves(shardings)))
  ckpt.close()


def test_keeps_latest_k_and_the_best_by_validation_loss(tmp_path, setup):
  _, state, _, _ = setup
  ckpt = checkpoint.Checkpointer(tmp_path, keep=2)
  val_losses = {2: 3.0, 4: 1.0, 6: 2.0}  # evaluations at steps 2, 4, 6; best is 4
  for step in range(1, 9):
    ckpt.save(step, state, {"data": step, "samples_seen": step}, val_loss=val_losses.get(step))
  ckpt.wait()
  assert ckpt.steps() == [4, 7, 8]
  assert (ckpt.best_step(), ckpt.latest_step()) == (4, 8)
  assert [ckpt.resolve(w) for w in ("best", "latest", 7, "8")] == [4, 8, 7, 8]
  with pytest.raises(ValueError, match="no checkpoint for step 5 .* saved steps: 4, 7, 8"):
    ckpt.resolve(5)
  ckpt.close()


def test_best_without_any_evaluation_is_the_latest(tmp_path, setup):
  _, state, _, _ = setup
  ckpt = checkpoint.Checkpointer(tmp_path, keep=1)
  for step in (1, 2):
    ckpt.save(step, state, {"data": step, "samples_seen": step})
  ckpt.wait()
  assert ckpt.resolve("best") == 2
  ckpt.close()
  with pytest.raises(ValueError, match="no checkpoint in"):
    checkpoint.Checkpointer(tmp_path / "empty").resolve("latest")


def test_restore_params_reads_only_the_model(tmp_path, setup):
  graphdef, state, _, mesh = setup
  ckpt = checkpoint.Checkpointer(tmp_path)
  ckpt.save(3, state, {"data": 3, "samples_seen": 3})
  ckpt.close()
  model_def, model_state = nnx.split(Tiny(nnx.Rngs(5)))
  reader = checkpoint.Checkpointer(tmp_path, read_only=True)
  params, meta = reader.restore_params(3, model_state,
                                       sharding.state_shardings(model_state, mesh, []))
  assert meta["step"] == 3
  saved_model, _ = nnx.merge(graphdef, state)
  for a, b in zip(arrays(nnx.state(saved_model)), arrays(params)):
    np.testing.assert_array_equal(a, b)
