"""Mesh construction from config and logical-axis -> mesh-axis shardings."""
import jax
import optax
import pytest
from flax import nnx
from jax.sharding import AbstractMesh, AxisType, PartitionSpec as P

from configs import common
from nupa_jax import models
from nupa_jax import sharding


def abstract_mesh(data=2, fsdp=2, tensor=2):
  return AbstractMesh((data, fsdp, tensor), sharding.MESH_AXES,
                      axis_types=(AxisType.Auto,) * 3)


@pytest.mark.parametrize("shape, devices, expected", [
    ({"data": -1}, 8, (8, 1, 1)),
    ({"data": 2, "fsdp": -1, "tensor": 2}, 8, (2, 2, 2)),
    ({"data": 1, "fsdp": 4, "tensor": 2}, 8, (1, 4, 2)),
    ({"tensor": -1}, 1, (1, 1, 1)),
])
def test_mesh_shape_fills_the_rest(shape, devices, expected):
  assert sharding.mesh_shape(shape, devices) == expected


@pytest.mark.parametrize("shape, devices, message", [
    ({"data": 3, "fsdp": -1}, 8, "needs a multiple of 3 devices but 8 are available"),
    ({"data": 2, "fsdp": 2}, 8, "uses 4 devices but 8 are available"),
    ({"data": -1, "fsdp": -1}, 8, "at most one -1"),
    ({"data": 0}, 8, "sizes must be positive"),
    ({"model": 2}, 8, r"unknown mesh axes \['model'\] in config.mesh.shape; known: data, "
                      "fsdp, tensor"),
])
def test_mesh_shape_errors_name_the_fix(shape, devices, message):
  with pytest.raises(ValueError, match=message):
    sharding.mesh_shape(shape, devices)


def test_make_mesh_on_this_host_has_auto_axes():
  mesh = sharding.make_mesh({"data": -1, "fsdp": 1, "tensor": 1})
  assert mesh.axis_names == sharding.MESH_AXES
  assert mesh.devices.size == jax.device_count()
  assert all(t == AxisType.Auto for t in mesh.axis_types)


def test_logical_to_spec_maps_each_mesh_axis_once_and_only_where_it_divides():
  rules = sharding.normalize_rules(common.MESH_RULES)
  mesh = abstract_mesh()
  assert sharding.logical_to_spec(("embed", "mlp"), (64, 96), rules, mesh) == P("fsdp", "tensor")
  # 3 KV heads do not split 2 ways: replicated on that dimension.
  assert sharding.logical_to_spec(("embed", "kv_heads", "head_dim"), (64, 3, 16), rules,
                                  mesh) == P("fsdp", None, None)
  # Two dimensions mapped to the same mesh axis: only the first gets it.
  assert sharding.logical_to_spec(("embed", "embed"), (64, 64), rules, mesh) == P("fsdp", None)
  # The batch takes data x fsdp when both divide, data alone when only that does.
  assert sharding.logical_to_spec(("batch", None), (8, 5), rules, mesh) == P(("data", "fsdp"),
                                                                             None)
  assert sharding.logical_to_spec(("batch",), (6,), rules, mesh) == P("data")
  # Mesh axes of size 1 are dropped.
  assert sharding.logical_to_spec(("embed", "mlp"), (64, 96), rules,
                                  abstract_mesh(8, 1, 1)) == P(None, None)


def test_unknown_logical_axis_and_mesh_axis_are_reported():
  rules = sharding.normalize_rules(common.MESH_RULES)
  with pytest.raises(ValueError, match="no mesh rule for logical axis 'experts'"):
    sharding.logical_to_spec(("experts",), (4,), rules, abstract_mesh())
  with pytest.raises(ValueError, match="maps 'embed' to unknown mesh axes"):
    sharding.normalize_rules([("embed", "model")])


def test_state_shardings_cover_every_leaf_of_model_and_optimizer():
  """Every parameter gets its rule's sharding, and so do its Adam moments; scalars (the
  step count) and unnamed leaves are replicated on the mesh, never left host-local."""
  config = common.model("tiny")

  def build():
    with nnx.use_eager_sharding(False):
      model = models.build(config, 40, rngs=nnx.Rngs(0))
      return model, nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)

  _, state = nnx.split(nnx.eval_shape(build))
  mesh = abstract_mesh()
  shardings = sharding.state_shardings(state, mesh, common.MESH_RULES)
  leaves = jax.tree.leaves(shardings)
  assert len(leaves) == len(jax.tree.leaves(state))
  assert all(s.mesh == mesh for s in leaves)
  pure = nnx.to_pure_dict(shardings)
  params = jax.tree.leaves(pure[0]["layers"])
  assert any("tensor" in str(s.spec) for s in params)  # heads / mlp split over tensor
  assert any("fsdp" in str(s.spec) for s in params)  # embed split over fsdp
  mu = pure[1]["opt_state"][0]["mu"]  # Adam's first moment mirrors the parameters
  assert jax.tree.map(lambda s: s.spec, mu) == jax.tree.map(lambda s: s.spec, pure[0])
  assert pure[1]["step"].spec == P()


def test_optimizer_over_data_splits_moments_and_gradients_but_not_parameters():
  """ZeRO stage 1: Adam's moments and the gradients that update them gain the `data` axis
  on `embed`; the parameters keep the rules' layout; a dimension `data` does not divide
  (a [layers, 1] array here: none) stays replicated."""
  config = common.model("tiny")

  def build():
    with nnx.use_eager_sharding(False):
      model = models.build(config, 40, rngs=nnx.Rngs(0))
      return model, nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)

  abstract = nnx.eval_shape(build)
  _, state = nnx.split(abstract)
  mesh = abstract_mesh(data=2, fsdp=1, tensor=1)
  plain, no_grads = models.state.shardings(abstract, state, mesh, common.MESH_RULES)
  split, grads = models.state.shardings(abstract, state, mesh, common.MESH_RULES,
                                        optimizer_over_data=True)
  assert no_grads is None
  pure = lambda tree: tree if isinstance(tree, dict) else nnx.to_pure_dict(tree)
  specs = lambda tree: [s.spec for s in jax.tree.leaves(pure(tree))]
  assert specs(split[0]) == specs(plain[0]) and "data" not in str(specs(split[0]))
  mu = nnx.to_pure_dict(split[1])["opt_state"][0]["mu"]
  assert specs(mu) == specs(grads)
  embed = nnx.to_pure_dict(grads)["embed"]["table"].spec  # [vocab, embed]
  assert embed == P(None, "data")
  assert all("data" in str(s) for s in specs(mu))  # every parameter has an `embed` axis
  assert nnx.to_pure_dict(split[1])["step"].spec == P()
  rules = dict(sharding.optimizer_rules(common.MESH_RULES))  # only `embed` gains `data`
  assert rules.pop("embed") == ("fsdp", "data")
  assert rules == {k: v for k, v in sharding.normalize_rules(common.MESH_RULES).items()
                   if k != "embed"}
