"""Small helpers shared by the model tests: tiny configs and one jitted forward for all models.

Compiling dominates these tests' time on CPU: every test builds the same tiny shapes (the
eagerly run initialisers compile once per shape and process), and forward passes go through
one jitted function, compiled without LLVM optimisation, whose cache is keyed by the model's
graphdef.
"""
from __future__ import annotations

import functools

import jax
from flax import nnx

from nupa_jax import models

VOCAB = 24


def tiny(posenc: str | dict = "rope", **overrides) -> dict:
  """The tiny preset (float32) with a positional encoding and any field overridden."""
  pe = {"name": posenc} if isinstance(posenc, str) else posenc
  return {"preset": "tiny", "posenc": pe, **overrides}


QUICK = {"xla_backend_optimization_level": 0}


def build(config: dict, seed: int = 0, **kwargs) -> models.Transformer:
  return models.build(config, VOCAB, rngs=nnx.Rngs(seed), **kwargs)


@functools.partial(jax.jit, static_argnums=0, compiler_options=QUICK)
def _forward(graphdef, state, inputs, features):
  return nnx.merge(graphdef, state)(inputs, **features)


def forward(model: nnx.Module, inputs, **features) -> jax.Array:
  """model(inputs, **features) under jax.jit."""
  graphdef, state = nnx.split(model)
  return _forward(graphdef, state, inputs, features)
