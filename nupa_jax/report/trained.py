"""Which digit lengths a run trained each task on, read from its config as `nupa_jax.data`
reads it, so figures can shade the training range.

`data.tasks` ({task: weight}, aliases allowed, `"all"` = every task) says which tasks were
trained; `data.task_digits` ({task: [lo, hi]}) overrides `data.train_digits`, which is one
[lo, hi] or {task: [lo, hi]} with an optional `"*"` default entry.
"""
from typing import Any

from nupa_jax import tasks as tasks_lib

# `nupa_jax.data.mixture`'s keys, spelled here because importing nupa_jax.data loads jax and
# grain (seconds) for two strings.
ALL = "all"
DEFAULT_KEY = "*"
Range = tuple[int, int]


def canonical(name: str) -> str:
  try:
    return tasks_lib.get(name).name
  except ValueError:  # a task this checkout does not know: keep its name as written
    return name


def _range(value: Any) -> Range | None:
  if (isinstance(value, (list, tuple)) and len(value) == 2
      and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
    return (value[0], value[1])
  return None


def train_ranges(config: dict[str, Any], tasks: list[str]) -> dict[str, Range]:
  """{task: (lo, hi)} for the evaluated `tasks` that were trained; `config` is flattened.

  Raises ValueError naming the field when a range is not [lo, hi].
  """
  weights = config.get("data.tasks")
  if isinstance(weights, str):
    weights = {weights: 1.0}
  trained = None if not isinstance(weights, dict) or ALL in weights else {
      canonical(t) for t, w in weights.items() if w}
  default = config.get("data.train_digits")
  per_task = default if isinstance(default, dict) else {DEFAULT_KEY: default}
  per_task = {k if k == DEFAULT_KEY else canonical(k): v for k, v in per_task.items()}
  overrides = config.get("data.task_digits") or {}
  per_task.update({canonical(k): v for k, v in overrides.items()})
  out = {}
  for task in tasks:
    if trained is not None and task not in trained:
      continue
    value = per_task.get(task, per_task.get(DEFAULT_KEY))
    if value is None:
      continue
    if _range(value) is None:
      raise ValueError(f"the training range of {task} is {value!r}; expected [lo, hi] "
                       "(config.data.train_digits / task_digits)")
    out[task] = _range(value)
  return out
