"""Typed config sections: a frozen dataclass per section, read once, refusing fields nobody reads.

A ConfigDict lets any field in; a field nothing reads then does nothing, silently
(`--config.eval.test_seed=1` once did). `read(config, name, cls)` builds section `name` as the
frozen dataclass `cls` (missing fields take the dataclass's defaults) and raises a ValueError
naming any field the dataclass does not have, with where that setting lives when it moved
(`MOVED`). `plain` turns ConfigDicts into the plain dicts the settings classes hold.

Old runs: their `config.json` may hold fields from before a knob had one name. `upgrade(config)`
maps them, exactly as those runs used them (`LEGACY`), so an old workdir still evaluates.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, TypeVar

import ml_collections

T = TypeVar("T")

# Fields that are not read where they are written: `section.field` -> where the knob lives.
MOVED = {
    "eval.test_seed": "config.data.test_seed (the frozen test set's seed, also the one the "
                      "training data excludes)",
    "data.seed": "config.seed (the run's seed: model initialisation and data)",
    "data.batch_size": "config.train.batch_size",
}


def plain(value: Any) -> Any:
  """ConfigDicts (which are not Mappings) as plain dicts, recursively."""
  if isinstance(value, ml_collections.ConfigDict):
    return value.to_dict()
  return value


def check_fields(given, known, section: str) -> None:
  """ValueError naming the first field of `given` not in `known` (and where it moved)."""
  for field in sorted(set(given) - set(known)):
    moved = MOVED.get(f"{section}.{field}")
    hint = (f"did you mean {moved}?" if moved else
            f"known: {', '.join(sorted(known))}")
    raise ValueError(f"config.{section}.{field} is not read by anything; {hint}")


def read(config, section: str, cls: type[T]) -> T:
  """Section `section` of `config` as the frozen dataclass `cls` (see the module docstring)."""
  given = config.get(section) or {}
  fields = {f.name: f for f in dataclasses.fields(cls)}
  check_fields(given, fields, section)
  missing = [name for name, f in fields.items() if name not in given
             and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
  if missing:
    raise ValueError(f"config.{section} needs {', '.join(missing)}")
  return cls(**{name: plain(given[name]) for name in fields if name in given})


def _take(config, section: str, field: str):
  value = config[section][field]
  del config[section][field]
  return value


def _upgrade_data_seed(config) -> None:
  seed = _take(config, "data", "seed")
  if "seed" not in config:
    config.seed = seed
  # A data seed unlike config.seed only ever changed the training stream, which nothing reads
  # back from a finished run (evaluation reads the model and the test set).


def _upgrade_data_batch_size(config) -> None:
  size = _take(config, "data", "batch_size")
  if size:  # 0 meant config.train.batch_size, which the pipeline then used
    if "train" not in config:
      config.train = ml_collections.ConfigDict()
    config.train.batch_size = size


def _drop_eval_test_seed(config) -> None:
  _take(config, "eval", "test_seed")  # never read: the test set came from data.test_seed


# `section.field` of old config.json files -> how it is carried into today's names.
LEGACY = {
    ("data", "seed"): _upgrade_data_seed,
    ("data", "batch_size"): _upgrade_data_batch_size,
    ("eval", "test_seed"): _drop_eval_test_seed,
}


def upgrade(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """A copy of a saved run's config with its legacy fields (`LEGACY`) in today's names."""
  out = copy.deepcopy(config)
  for (section, field), carry in LEGACY.items():
    if field in (out.get(section) or {}):
      carry(out)
  return out
