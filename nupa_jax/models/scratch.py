"""The from-scratch model source: the model of `config.model`, fresh or from `config.init_from`.

`config.init_from` is another run's workdir `DIR[:best|latest|STEP]` (default latest): its
model parameters start this run; the optimizer and the data start fresh.
"""
from __future__ import annotations

from flax import nnx

from nupa_jax import checkpoint as checkpoint_lib
from nupa_jax import runmode
from nupa_jax import sharding as sharding_lib
from nupa_jax.models import state as state_lib


class Scratch(runmode.ModelSource):
  """Every run that does not name a pretrained checkpoint (`config.pretrained`)."""
  name = "scratch"

  def claims(self, config) -> bool:
    return not config.get("pretrained")

  def state_spec(self, config, vocab_size, mesh, *, seed, tx=None):
    return state_lib.spec(config.model, vocab_size, mesh, config.mesh.rules, seed=seed, tx=tx,
                          optimizer_over_data=sharding_lib.optimizer_over_data(config))

  def initial_state(self, spec, config, vocab_size, mesh, *, seed, tx=None):
    state = state_lib.initialise(spec, config.model, vocab_size, seed=seed, tx=tx)
    if config.get("init_from"):
      params = _load_params(config.init_from, self.state_spec(config, vocab_size, mesh,
                                                              seed=seed))
      pure = nnx.to_pure_dict(state)
      pure[0] = nnx.to_pure_dict(params)
      nnx.replace_by_pure_dict(state, pure)
    return state

  def trainable(self, config):
    del config
    return nnx.Param


def _load_params(init_from: str, model_spec: state_lib.StateSpec):
  """Model parameters from `DIR[:best|latest|STEP]` (another run's workdir; default latest)."""
  path, _, which = init_from.partition(":")
  source = checkpoint_lib.Checkpointer(path, read_only=True)
  try:
    step = source.resolve(which or "latest")
  except ValueError as e:
    raise ValueError(f"config.init_from={init_from!r}: {e}") from e
  return source.restore_params(step, model_spec.abstract, model_spec.shardings)[0]


runmode.register_model_source(Scratch())
