"""Small helpers shared by the model tests: tiny configs and one jitted forward per model."""
from __future__ import annotations

import jax
from flax import nnx

from nupa_jax import models

VOCAB = 24


def tiny(posenc: str | dict = "rope", **overrides) -> dict:
  """The tiny preset (float32) with a positional encoding and any field overridden."""
  pe = {"name": posenc} if isinstance(posenc, str) else posenc
  return {"preset": "tiny", "posenc": pe, **overrides}


def build(config: dict, seed: int = 0, **kwargs) -> models.Transformer:
  return models.build(config, VOCAB, rngs=nnx.Rngs(seed), **kwargs)


def jitted(model: nnx.Module):
  """(state, fn): fn(state, inputs, **features) runs the model's forward pass under jax.jit."""
  graphdef, state = nnx.split(model)

  @jax.jit
  def forward(state, inputs, features):
    return nnx.merge(graphdef, state)(inputs, **features)

  return state, lambda state, inputs, **features: forward(state, inputs, features)
