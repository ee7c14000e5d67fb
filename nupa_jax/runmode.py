"""Kinds of run as plug-ins: how a run writes its samples, and where its model comes from.

A run's samples are digit text, RF-CoT traces or a pretrained checkpoint's prompts (its
`TextMode`); its model is built from `config.model` or read from a pretrained checkpoint (its
`ModelSource`). The two vary independently — RF-CoT trains from scratch or finetunes a
pretrained Llama — so each is a registry of its own, and a run's `RunMode` is the one text mode
and the one model source that claim its config:

    text modes     digits (nupa_jax.text), rfcot (nupa_jax.rfcot), hf (nupa_jax.llm)
    model sources  scratch (nupa_jax.models), pretrained (nupa_jax.llm)

Each package registers its plug-ins when imported; `nupa_jax.plugins` imports them all (the
trainer and `saved_run` import it). The trainer and the evaluator call `resolve(config)` once
and use what it returns, the data pipeline `text_mode(config)`; none of them tests for a kind of
run. This module imports nothing of nupa_jax, so every layer may use it, and a new kind of run
is one package that registers here.
"""
from __future__ import annotations

import abc
import dataclasses
import os
from typing import Any


class TextMode(abc.ABC):
  """How a run's questions become token ids: its encoder, and the data fields it needs."""
  name: str

  @abc.abstractmethod
  def claims(self, config) -> bool:
    """Whether `config` writes its samples this way (by `config.text.tokenizer.name`)."""

  @abc.abstractmethod
  def encoder(self, config):
    """The run's encoder (`nupa_jax.text.SampleEncoder`); ValueError names a bad option."""

  def configure(self, config, encoder):
    """`config` with the data fields this text needs filled in (the config as run: it is
    what the trainer saves); by default unchanged."""
    del encoder
    return config


class ModelSource(abc.ABC):
  """Where a run's model comes from, what of it trains, and what happens when training ends."""
  name: str
  # Whether the positional encoding's position limits (`posenc.check_limits`) apply: a
  # pretrained checkpoint's rotary positions have none.
  position_limits: bool = True

  @abc.abstractmethod
  def claims(self, config) -> bool:
    """Whether `config`'s model comes from this source."""

  @abc.abstractmethod
  def state_spec(self, config, vocab_size: int, mesh, *, seed: int, tx=None):
    """The `models.state.StateSpec` of the model (and optimizer, with `tx`) on `mesh`."""

  @abc.abstractmethod
  def initial_state(self, spec, config, vocab_size: int, mesh, *, seed: int, tx=None):
    """The sharded state a fresh run starts from."""

  @abc.abstractmethod
  def trainable(self, config) -> Any:
    """The nnx filter of the variables a train step differentiates."""

  def finish(self, graphdef, state, config, workdir: os.PathLike) -> str | None:
    """Runs on every process when training ends (e.g. an export); returns a line to print."""
    del graphdef, state, config, workdir
    return None


@dataclasses.dataclass(frozen=True)
class RunMode:
  """The text mode and model source of one config."""
  text: TextMode
  model: ModelSource

  @property
  def name(self) -> str:
    return f"{self.text.name}/{self.model.name}"


_TEXT_MODES: dict[str, TextMode] = {}
_MODEL_SOURCES: dict[str, ModelSource] = {}


def register_text_mode(mode: TextMode) -> TextMode:
  _TEXT_MODES[mode.name] = mode
  return mode


def register_model_source(source: ModelSource) -> ModelSource:
  _MODEL_SOURCES[source.name] = source
  return source


def _tokenizer_name(config) -> str | None:
  text = config.get("text") or {}
  return (text.get("tokenizer") or {}).get("name")


def _one(registry: dict, config, what: str, setting: str):
  claimants = [p for p in registry.values() if p.claims(config)]
  if len(claimants) == 1:
    return claimants[0]
  if claimants:
    raise ValueError(f"{setting} is claimed by several {what}s: "
                     f"{', '.join(p.name for p in claimants)}")
  raise ValueError(f"no registered {what} claims {setting}; registered: "
                   f"{', '.join(sorted(registry)) or 'none'}. Import the package that "
                   "registers it (nupa_jax.plugins imports them all)")


def text_mode(config) -> TextMode:
  """The one registered text mode that claims `config` (all the data layer needs)."""
  return _one(_TEXT_MODES, config, "text mode",
              f"config.text.tokenizer name {_tokenizer_name(config)!r}")


def resolve(config) -> RunMode:
  """The RunMode of `config`: exactly one text mode and one model source must claim it."""
  return RunMode(text_mode(config), _one(_MODEL_SOURCES, config, "model source",
                                         f"config.pretrained={config.get('pretrained') or ''!r}"))
