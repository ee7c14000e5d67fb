"""`config.data`: its fields, their defaults, and the checked values the pipeline runs on.

The field list is documented in the package docstring (`nupa_jax/data/__init__.py`). A config
may leave any field out; `defaults()` gives a ConfigDict with all of them for configs/common.py.
Field types never change between variants (ml_collections refuses a str -> dict override), so
"every task" is the key `"all"` of the `tasks` dict, and per-task ranges live in their own
`task_digits` dict rather than in `train_digits`.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import ml_collections

from nupa_jax import settings as settings_lib
from nupa_jax import tasks as tasks_lib
from nupa_jax.benchmark import testset
from nupa_jax.data import mixture as mixture_lib
from nupa_jax.data import workers as workers_lib

# Samples a row holds, by packing mode ("packed" reads config.data.samples_per_row).
PACKINGS = {
    "packed": lambda data: int(data["samples_per_row"]),
    "padded": lambda data: 1,
}

_DEFAULTS = dict(
    tasks={"add_int": 1.0},
    train_digits=(1, 8),
    task_digits={},
    length_weights={},
    pool_size=None,
    packing="packed",
    loss_on_padding=False,
    seq_len=0,
    samples_per_row=16,
    num_workers=workers_lib.AUTO,
    device_prefetch=2,
    stacked_transfer=False,
    exclude_test=True,
    test_seed=0,
    test_per_length=1000,
)


def defaults() -> ml_collections.ConfigDict:
  """A `config.data` with every field at its default."""
  return ml_collections.ConfigDict(_DEFAULTS)


@dataclasses.dataclass(frozen=True)
class Settings:
  """The data config, checked and resolved (mixture included)."""
  mixture: mixture_lib.Mixture
  seed: int  # config.seed: the run's seed
  pool_size: int | None
  batch_size: int  # config.train.batch_size: samples per global batch
  packing: str
  samples_per_row: int
  loss_on_padding: bool
  seq_len: int  # 0: sized from a probe of the stream (batches.py)
  num_workers: int  # workers_lib.AUTO: resolved by the pipeline (data/workers.py)
  # Batches a background thread places on the devices ahead of the step (pipeline.py); 0: the
  # training loop places each batch itself.
  device_prefetch: int
  # A batch's fields placed as one array: one host-to-device transfer per device and batch
  # instead of one per field (pipeline.train_iterator's `stacked`).
  stacked_transfer: bool
  exclude_test: bool
  test_seed: int
  test_per_length: int
  # config.model.attention_span: the most positions a sample may take, since the model's
  # attention holds no longer one (0: any; batches.Batcher refuses a longer one).
  longest_sample: int = 0

  @property
  def rows(self) -> int:
    """Rows of a global batch."""
    return self.batch_size // self.samples_per_row

  @classmethod
  def from_config(cls, config: ml_collections.ConfigDict) -> Settings:
    """Reads `config.data` (missing fields: defaults), the run's `config.seed` (default 0) and
    its batch size `config.train.batch_size`."""
    given = config.get("data") or {}
    settings_lib.check_fields(given, _DEFAULTS, "data")
    data = {k: settings_lib.plain(given.get(k, v)) for k, v in _DEFAULTS.items()}
    batch_size = int((config.get("train") or {}).get("batch_size", 0))
    if batch_size < 1:
      raise ValueError("set config.train.batch_size: samples per global batch")
    if data["packing"] not in PACKINGS:
      raise ValueError(f"unknown config.data.packing {data['packing']!r}; known: "
                       f"{', '.join(PACKINGS)}")
    samples_per_row = PACKINGS[data["packing"]](data)
    if data["loss_on_padding"] and data["packing"] != "padded":
      raise ValueError("config.data.loss_on_padding scores the padding of one-sample rows: set "
                       "config.data.packing='padded' with it")
    if samples_per_row < 1 or batch_size % samples_per_row:
      raise ValueError(f"batch size {batch_size} is not a multiple of "
                       f"config.data.samples_per_row {samples_per_row}; make it a divisor")
    mixture = mixture_lib.resolve(
        data["tasks"], _digit_ranges(data["train_digits"], data["task_digits"]),
        data["length_weights"] or "uniform", known=tasks_lib.names(),
        canonical=lambda name: tasks_lib.get(name).name,
        max_digits=testset.max_length)
    pool_size = data["pool_size"]
    if pool_size is not None and int(pool_size) < 1:
      raise ValueError(f"config.data.pool_size must be None (infinite) or >= 1, got {pool_size}")
    if int(data["seq_len"]) < 0:
      raise ValueError("config.data.seq_len must be >= 0 (0 = auto)")
    if int(data["device_prefetch"]) < 0:
      raise ValueError("config.data.device_prefetch must be >= 0 (0 = no prefetch thread)")
    if int(data["num_workers"]) < workers_lib.AUTO:
      raise ValueError(f"config.data.num_workers must be >= 0 or {workers_lib.AUTO} (auto: "
                       f"from the devices and CPUs)")
    return cls(
        mixture=mixture, seed=int(config.get("seed", 0)),
        pool_size=None if pool_size is None else int(pool_size),
        batch_size=batch_size, packing=data["packing"], samples_per_row=samples_per_row,
        loss_on_padding=bool(data["loss_on_padding"]),
        seq_len=int(data["seq_len"]), num_workers=int(data["num_workers"]),
        device_prefetch=int(data["device_prefetch"]),
        stacked_transfer=bool(data["stacked_transfer"]),
        exclude_test=bool(data["exclude_test"]), test_seed=int(data["test_seed"]),
        test_per_length=int(data["test_per_length"]),
        longest_sample=int((config.get("model") or {}).get("attention_span", 0)))


def _digit_ranges(train_digits: Any, task_digits: Mapping[str, Any]) -> Any:
  """`train_digits` with per-task overrides, in the form `mixture.resolve` reads."""
  if not task_digits:
    return tuple(train_digits)
  out = {tasks_lib.get(name).name: tuple(r) for name, r in task_digits.items()}
  out[mixture_lib.DEFAULT_KEY] = tuple(train_digits)
  return out
