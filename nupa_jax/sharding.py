"""The device mesh from config, and where every array lives on it.

One mesh with axes `data`, `fsdp`, `tensor` serves a laptop CPU (1x1x1), one GPU, a GPU node
and a TPU pod: batch rows are split over data x fsdp, parameters carry logical axis names
(`embed`, `heads`, `mlp`, `vocab`, ...) that `config.mesh.rules` maps to mesh axes. The
mapping is our own (not `nnx.logical_axis_rules`) so that a dimension a mesh axis does not
divide (2 KV heads on 4-way tensor parallelism, a tiny vocabulary) falls back to replication
instead of failing, and every leaf, optax's scalar step count included, gets a sharding on
the mesh (orbax cannot save a host-local array in a multi-host run).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import jax
from flax import nnx
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

MESH_AXES = ("data", "fsdp", "tensor")
BATCH_AXES = ("data", "fsdp")  # batch rows are split over both; fsdp also shards params
_METADATA_KEYS = ("out_sharding", "sharding_names", "sharding")  # flax versions differ

# Logical axes (set by nupa_jax.models) -> mesh axes, the default of every run
# (`config.mesh.rules`) and of `models.hf.load_pretrained`. Batch rows are split over
# data x fsdp; parameters are sharded over fsdp on their `embed` dimension and over tensor on
# heads / mlp / vocab (Megatron-style). A dimension that a mesh axis does not divide stays
# replicated on that axis (`logical_to_spec`), so one rule set serves every preset.
DEFAULT_RULES = (
    ("batch", BATCH_AXES),
    ("embed", "fsdp"),
    ("vocab", "tensor"),
    ("heads", "tensor"),
    ("kv_heads", "tensor"),
    ("mlp", "tensor"),
    ("head_dim", None),
    ("layers", None),
)


def mesh_shape(shape: Mapping[str, int], num_devices: int) -> tuple[int, ...]:
  """Axis sizes in MESH_AXES order; one axis may be -1 (= the devices the others leave)."""
  unknown = sorted(set(shape) - set(MESH_AXES))
  if unknown:
    raise ValueError(f"unknown mesh axes {unknown} in config.mesh.shape; known: "
                     f"{', '.join(MESH_AXES)}")
  sizes = [int(shape.get(axis, 1)) for axis in MESH_AXES]
  if sizes.count(-1) > 1 or any(s == 0 or s < -1 for s in sizes):
    raise ValueError(f"config.mesh.shape {dict(shape)}: sizes must be positive, with at most "
                     "one -1 (= the rest of the devices)")
  fixed = math.prod(s for s in sizes if s != -1)
  if -1 in sizes:
    if num_devices % fixed:
      raise ValueError(
          f"config.mesh.shape {dict(shape)} needs a multiple of {fixed} devices but "
          f"{num_devices} are available; choose axis sizes whose product divides "
          f"{num_devices}")
    sizes[sizes.index(-1)] = num_devices // fixed
  elif fixed != num_devices:
    raise ValueError(
        f"config.mesh.shape {dict(shape)} uses {fixed} devices but {num_devices} are "
        f"available; make the sizes multiply to {num_devices} or set one axis to -1")
  return tuple(sizes)


def make_mesh(shape: Mapping[str, int], devices: Sequence[jax.Device] | None = None) -> Mesh:
  """A mesh over `devices` (default: all, across processes) with Auto axis types."""
  devices = list(devices) if devices is not None else jax.devices()
  sizes = mesh_shape(shape, len(devices))
  return jax.make_mesh(sizes, MESH_AXES, axis_types=(AxisType.Auto,) * len(MESH_AXES),
                       devices=devices)


def _axes(value) -> tuple[str, ...]:
  """A rule's right-hand side as a tuple of mesh axis names (None -> ())."""
  if value is None:
    return ()
  if isinstance(value, str):
    return (value,)
  return tuple(value)


def normalize_rules(rules: Iterable) -> dict[str, tuple[str, ...]]:
  """`((logical, mesh_axes), ...)` (as config or JSON lists) -> {logical: (mesh axes)}."""
  out = {}
  for rule in rules:
    logical, axes = rule
    axes = _axes(axes)
    bad = [a for a in axes if a not in MESH_AXES]
    if bad:
      raise ValueError(f"config.mesh.rules maps {logical!r} to unknown mesh axes {bad}; "
                       f"known: {', '.join(MESH_AXES)}")
    out[logical] = axes
  return out


def logical_to_spec(names: Sequence[str | None], shape: Sequence[int],
                    rules: Mapping[str, tuple[str, ...]], mesh: Mesh) -> PartitionSpec:
  """PartitionSpec for an array with logical axis `names`.

  Each mesh axis is used at most once per array; mesh axes of size 1 are dropped; when the
  mapped axes do not divide the dimension, trailing axes are dropped until they do (possibly
  down to replication).
  """
  used: set[str] = set()
  spec = []
  for name, dim in zip(names, shape):
    if name is None:
      spec.append(None)
      continue
    if name not in rules:
      raise ValueError(f"no mesh rule for logical axis {name!r}; add ({name!r}, AXES) to "
                       f"config.mesh.rules (rules exist for: {', '.join(sorted(rules))})")
    axes = [a for a in rules[name] if a not in used and mesh.shape[a] > 1]
    while axes and dim % math.prod(mesh.shape[a] for a in axes):
      axes.pop()
    used.update(axes)
    spec.append(None if not axes else axes[0] if len(axes) == 1 else tuple(axes))
  return PartitionSpec(*spec)


def optimizer_rules(rules: Iterable) -> tuple:
  """The rules of the optimizer state under `config.mesh.shard_optimizer_over_data`: the
  parameters' `rules`, with `embed` also split over `data`.

  Data parallelism alone replicates AdamW's moments and its update on every device; splitting
  them over `data` (ZeRO stage 1) leaves each device 1/data of the update's passes over the
  float32 state, and turns the gradient all-reduce into a reduce-scatter, with the updated
  parameters all-gathered after it: the same bytes on the wire. The parameters and the
  forward / backward pass are unchanged, so the numbers are too.
  """
  rules = normalize_rules(rules)
  if "data" not in rules.get("embed", ()):
    rules["embed"] = rules.get("embed", ()) + ("data",)
  return tuple(rules.items())


def optimizer_over_data(config) -> bool:
  """`config.mesh.shard_optimizer_over_data` (False where a config predates it)."""
  return bool(config.mesh.get("shard_optimizer_over_data", False))


def _logical_names(variable: nnx.Variable) -> tuple[str | None, ...] | None:
  metadata = variable.get_metadata()
  for key in _METADATA_KEYS:
    names = metadata.get(key)
    if names:
      return tuple(names)
  return None


def state_shardings(state, mesh: Mesh, rules: Iterable):
  """NamedShardings for an nnx state (model, optimizer, ...), shaped like the state.

  Variables without logical names (RNG keys, step counts, ...) are replicated.
  """
  rules = normalize_rules(rules)

  def one(leaf):
    if isinstance(leaf, nnx.Variable):
      value = leaf.get_value() if hasattr(leaf, "get_value") else leaf[...]
      names = _logical_names(leaf)
      shape = getattr(value, "shape", ())
      spec = logical_to_spec(names, shape, rules, mesh) if names else PartitionSpec()
      return leaf.replace(NamedSharding(mesh, spec))
    return NamedSharding(mesh, PartitionSpec())

  return jax.tree.map(one, state, is_leaf=lambda x: isinstance(x, nnx.Variable))


def batch_sharding(mesh: Mesh) -> NamedSharding:
  """Rows of a [rows, ...] batch split over data x fsdp, the rest replicated."""
  return NamedSharding(mesh, PartitionSpec(BATCH_AXES))


def replicated(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, PartitionSpec())


# What `constrain` splits an activation dimension over: the batch rows over data x fsdp
# (parameters, sharded over fsdp too, are all-gathered for the matmul), the Megatron-sharded
# feature dimensions (heads, mlp, vocab) over tensor.
ACTIVATION_AXES = {"batch": BATCH_AXES, "tensor": ("tensor",)}


def constrain(x: jax.Array, *dims: str | None) -> jax.Array:
  """`x` pinned to the layout `dims` (one of ACTIVATION_AXES' keys or None per leading
  dimension; the rest replicated) on the active mesh (`jax.set_mesh`).

  Without these pins GSPMD propagates the parameters' FSDP sharding (on `embed`) into the
  activations and computes layers sharded on features, all-gathering whole-batch activations
  between them, which scales poorly across GPUs (docs/benchmarks/). Mesh axes that do not
  divide a dimension are dropped (decoding batches, 2 KV heads on 4-way tensor parallelism);
  without a mesh, or on one device, `x` is returned as is.
  """
  mesh = jax.sharding.get_abstract_mesh()
  if mesh.empty or mesh.size == 1:
    return x
  spec, used = [], set()
  for dim, name in zip(x.shape, dims):
    axes = [a for a in (ACTIVATION_AXES[name] if name else ()) if a in mesh.axis_names
            and a not in used and mesh.shape[a] > 1]
    while axes and dim % math.prod(mesh.shape[a] for a in axes):
      axes.pop()
    used.update(axes)
    spec.append(tuple(axes) if axes else None)
  return jax.lax.with_sharding_constraint(x, PartitionSpec(*spec))


def tensor_parallel() -> bool:
  """Whether the active mesh (`jax.set_mesh`) splits the `tensor` axis over several devices."""
  mesh = jax.sharding.get_abstract_mesh()
  return not mesh.empty and mesh.shape.get("tensor", 1) > 1


def batch_divisor(mesh: Mesh) -> int:
  """Global batch rows must be a multiple of this (the data x fsdp devices)."""
  return math.prod(mesh.shape[a] for a in BATCH_AXES)
