"""The task mixture: which (task, length) cells a stream draws from, and in what share.

A mixture is a list of *cells* (task, digit length) with probabilities: the task weight from
`config.data.tasks` times the length weight within that task's training range (uniform by
default, as the paper's mix is from the lengths where its 10^7 samples per length are
feasible; below those it has every distinct question, e.g. 100 / 9,900 / 990,000 integer
pairs of 1 / 2 / 3 digits, and `length_weights` gives them that smaller share). Resolving
the config here, once, keeps the per-sample code down to a table lookup: a cell is chosen by
inverting the cumulative distribution at a point the stream layout (`stream.py`) computes
from the sample index.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np

ALL = "all"
DEFAULT_KEY = "*"  # in `train_digits` / `length_weights` dicts: the entry of everything not named


@dataclasses.dataclass(frozen=True)
class Mixture:
  """Cells (task, length) in a fixed order with their probabilities.

  The order matters to stratification (stream.py): a packed row takes evenly spaced points of
  the cumulative distribution, so cells sorted by token count (`sorted_by`) give every row a
  like mix of short and long samples and rows of nearly equal length.
  """
  tasks: tuple[str, ...]  # canonical task names of the cells
  lengths: tuple[int, ...]  # digit length of the cells
  probs: np.ndarray  # float64[cells], sums to 1

  def __post_init__(self):
    object.__setattr__(self, "_cdf", np.cumsum(self.probs))

  def __len__(self) -> int:
    return len(self.tasks)

  def cell(self, u: np.ndarray | float) -> np.ndarray:
    """Cell ids at points `u` in [0, 1) of the cumulative distribution."""
    ids = np.searchsorted(self._cdf, u, side="right")
    return np.minimum(ids, len(self.tasks) - 1)  # guards u against cdf[-1] = 1 - ulp

  def task_lengths(self) -> dict[str, tuple[int, ...]]:
    """{task: lengths it is trained on}, in cell order."""
    out: dict[str, list[int]] = {}
    for task, length in zip(self.tasks, self.lengths):
      out.setdefault(task, []).append(length)
    return {task: tuple(lengths) for task, lengths in out.items()}

  def sorted_by(self, keys: Sequence[float]) -> Mixture:
    """The same cells reordered by `keys` (one per cell; ties keep their order)."""
    order = np.argsort(np.asarray(keys), kind="stable")
    return Mixture(tuple(self.tasks[i] for i in order), tuple(self.lengths[i] for i in order),
                   self.probs[order])

  def without(self, cells: Collection[tuple[str, int]]) -> Mixture:
    """The mixture minus `cells`, each task keeping its share over its remaining lengths."""
    keep = np.array([(t, n) not in cells for t, n in zip(self.tasks, self.lengths)])
    if keep.all():
      return self
    tasks = np.array(self.tasks)
    probs = self.probs.copy()
    for task, share in self.task_probs().items():
      mine = tasks == task
      left = probs[mine & keep].sum()
      if left == 0:
        lengths = ", ".join(map(str, np.array(self.lengths)[mine]))
        raise ValueError(f"every training length of {task} ({lengths}) is used up by the "
                         "frozen test set; train it on longer lengths "
                         "(config.data.task_digits) or drop it from config.data.tasks")
      probs[mine] *= share / left
    index = np.flatnonzero(keep)
    return Mixture(tuple(self.tasks[i] for i in index), tuple(self.lengths[i] for i in index),
                   probs[index] / probs[index].sum())

  def task_probs(self) -> dict[str, float]:
    """{task: its share of the samples}."""
    out: dict[str, float] = {}
    for task, p in zip(self.tasks, self.probs):
      out[task] = out.get(task, 0.0) + float(p)
    return out


def _task_weights(tasks: Any, known: Sequence[str],
                  canonical: Callable[[str], str]) -> dict[str, float]:
  """{canonical task: weight}; the entry `"all"` gives its weight to every known task."""
  if isinstance(tasks, str):
    tasks = {tasks: 1.0}
  if not isinstance(tasks, Mapping) or not tasks:
    raise ValueError(f"config.data.tasks must be a non-empty {{task: weight}} dict (the key "
                     f"{ALL!r} weights every task), got {tasks!r}")
  out: dict[str, float] = {}
  for name, weight in tasks.items():
    if not weight >= 0:
      raise ValueError(f"config.data.tasks[{name!r}] = {weight}: weights must be >= 0")
    for task in known if name == ALL else [canonical(name)]:
      out[task] = out.get(task, 0.0) + float(weight)
  return out


def _digit_range(train_digits: Any, task: str) -> tuple[int, int]:
  if isinstance(train_digits, Mapping):
    if task in train_digits:
      train_digits = train_digits[task]
    elif DEFAULT_KEY in train_digits:
      train_digits = train_digits[DEFAULT_KEY]
    else:
      raise ValueError(f"config.data.train_digits names no range for {task!r}; add it or a "
                       f"default entry {DEFAULT_KEY!r}: (lo, hi)")
  lo, hi = (int(d) for d in train_digits)
  if not 1 <= lo <= hi:
    raise ValueError(f"train_digits {(lo, hi)} for {task!r}: need 1 <= lo <= hi")
  return lo, hi


def _length_weights(length_weights: Any, lengths: range, task: str) -> np.ndarray:
  if length_weights is None or length_weights == "uniform":
    return np.ones(len(lengths))
  if not isinstance(length_weights, Mapping):
    raise ValueError(f"config.data.length_weights must be 'uniform' or a {{length: weight}} "
                     f"dict, got {length_weights!r}")
  default = float(length_weights.get(DEFAULT_KEY, 0.0))
  weights = {int(k): float(v) for k, v in length_weights.items() if k != DEFAULT_KEY}
  out = np.array([weights.get(length, default) for length in lengths])
  if (out < 0).any() or not out.sum() > 0:
    raise ValueError(f"config.data.length_weights gives {task!r} no positive weight on its "
                     f"training lengths {lengths.start}-{lengths.stop - 1}")
  return out


def resolve(tasks: Any, train_digits: Any = (1, 8), length_weights: Any = "uniform", *,
            known: Sequence[str], canonical: Callable[[str], str],
            max_digits: Callable[[str], int | None]) -> Mixture:
  """Builds the mixture from the config fields.

  Args:
    tasks: {task: weight} (aliases accepted; the key `"all"` adds its weight to every task),
      or one task name.
    train_digits: `(lo, hi)` inclusive for every task, or {task: (lo, hi)} with an optional
      `"*"` default entry.
    length_weights: `"uniform"` or {length: weight} applied within each task's range
      (lengths it does not name get the `"*"` entry's weight, else 0).
    known: every task name (`tasks.names()`), used for `"all"`.
    canonical: maps an alias to its canonical name and raises on unknown names.
    max_digits: the longest length a task can be drawn at, None for no limit
      (`benchmark.testset.max_length`: integer and float tasks extend past the benchmark).
  """
  weights = _task_weights(tasks, known, canonical)
  total = sum(weights.values())
  if not total > 0:
    raise ValueError(f"config.data.tasks {dict(weights)} has no positive weight")
  cells = []  # (length, task, probability), by task then length
  for task in sorted(weights):
    if weights[task] == 0:
      continue
    lo, hi = _digit_range(train_digits, task)
    limit = max_digits(task)
    if limit is not None and hi > limit:
      raise ValueError(f"train_digits {(lo, hi)} for {task!r} exceed its {limit} digits; "
                       f"lower hi to {limit}")
    lengths = range(lo, hi + 1)
    within = _length_weights(length_weights, lengths, task)
    within = within / within.sum()
    cells += [(length, task, weights[task] / total * w)
              for length, w in zip(lengths, within) if w > 0]
  lengths, tasks, probs = zip(*cells)
  probs = np.asarray(probs, dtype=np.float64)
  return Mixture(tuple(tasks), tuple(lengths), probs / probs.sum())
