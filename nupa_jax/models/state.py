"""The model and its optimizer as one sharded nnx state: shapes first, arrays on the mesh.

The model is built once under `nnx.eval_shape` (no memory) to read its structure and the
logical axis names of its parameters; `sharding.state_shardings` turns those into
NamedShardings, and a jitted initialiser then creates every array directly in its shard (a
3B model never exists whole on one device). The same abstract state is the target of a
checkpoint restore.
"""
from __future__ import annotations

import dataclasses

import jax
import optax
from flax import nnx

from nupa_jax import sharding as sharding_lib
from nupa_jax.models import transformer


@dataclasses.dataclass(frozen=True)
class StateSpec:
  """Structure, shapes and shardings of a run's state (model, or (model, optimizer))."""
  graphdef: nnx.GraphDef
  abstract: nnx.State
  shardings: nnx.State
  needs_rng: bool  # the model's training pass draws random numbers (PE randomisation, dropout)
  feature_names: frozenset[str]  # per-token inputs the positional encoding reads
  # Where the train step puts the gradients: the optimizer state's layout when it differs from
  # the parameters' (`config.mesh.shard_optimizer_over_data`); None = the parameters'.
  grad_shardings: nnx.State | None = None


def shardings(abstract, state: nnx.State, mesh, rules, *, optimizer_over_data: bool = False
              ) -> tuple[nnx.State, nnx.State | None]:
  """(state shardings, gradient shardings) of the abstract model or (model, optimizer).

  With `optimizer_over_data` the optimizer state, and the gradients that update it, are split
  over `data` too (`sharding.optimizer_rules`); the parameters keep `rules`.
  """
  out = sharding_lib.state_shardings(state, mesh, rules)
  if not (optimizer_over_data and isinstance(abstract, tuple)):
    return out, None
  model, optimizer = abstract
  rules = sharding_lib.optimizer_rules(rules)
  out[1] = sharding_lib.state_shardings(state[1], mesh, rules)
  return out, sharding_lib.state_shardings(nnx.state(model, optimizer.wrt), mesh, rules)


def _build(model_config, vocab_size: int, seed: int, tx: optax.GradientTransformation | None):
  with nnx.use_eager_sharding(False):  # shardings are applied by jit, not at creation
    model = transformer.build(model_config, vocab_size, rngs=nnx.Rngs(seed))
    if tx is None:
      return model
    return model, nnx.Optimizer(model, tx, wrt=nnx.Param)


def spec(model_config, vocab_size: int, mesh, rules, *, seed: int = 0,
         tx: optax.GradientTransformation | None = None,
         optimizer_over_data: bool = False) -> StateSpec:
  """The StateSpec of the model (with an optimizer state when `tx` is given)."""
  abstract = nnx.eval_shape(lambda: _build(model_config, vocab_size, seed, tx))
  model = abstract[0] if tx is not None else abstract
  graphdef, state = nnx.split(abstract)
  state_shardings, grad_shardings = shardings(abstract, state, mesh, rules,
                                              optimizer_over_data=optimizer_over_data)
  return StateSpec(graphdef, state, state_shardings, model.requires_rng(),
                   frozenset(model.posenc.inputs), grad_shardings)


def initialise(state_spec: StateSpec, model_config, vocab_size: int, *, seed: int = 0,
               tx: optax.GradientTransformation | None = None) -> nnx.State:
  """Fresh parameters (and optimizer state) created in place on the mesh."""

  def create():
    return nnx.split(_build(model_config, vocab_size, seed, tx))[1]

  # The random initialisers compile to large integer kernels that LLVM spends long optimising
  # for a program that runs once: skip that.
  return jax.jit(create, out_shardings=state_spec.shardings,
                 compiler_options={"xla_backend_optimization_level": 0})()
