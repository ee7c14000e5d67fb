"""`config.eval` as frozen settings, read once (`nupa_jax.settings`).

The test set's seed is not here: it is `config.data.test_seed`, the one seed of the frozen test
set that training excludes and evaluation scores.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from nupa_jax import metrics
from nupa_jax import settings
from nupa_jax import tasks as tasks_lib
from nupa_jax.evaluation import positions as positions_lib


@dataclasses.dataclass(frozen=True)
class Eval:
  """When and on what a run is evaluated, and how answers are decoded."""
  every: int = 0  # steps between evaluations; 0: only at the end
  per_length: int = 1000  # test questions per task and length; 0 = validation loss only
  digits: tuple[int, int] = (1, 20)  # evaluated lengths (intersected with each task's)
  # {task: (lo, hi)}: the named tasks' evaluated lengths instead of `digits`, e.g. the digit
  # cells of a paper table (configs/rfcot.py)
  task_digits: dict = dataclasses.field(default_factory=dict)
  beyond_digits: tuple[int, ...] = ()  # lengths past each task's benchmark range
  tasks: tuple[str, ...] = ()  # () = the training tasks
  test_dir: str = ""  # a built test set; "" = regenerated from config.data.test_seed
  batch_size: int = 256  # prompts per generation batch
  greedy: bool = True  # False: sampling at temperature / top_p
  temperature: float = 0.6
  top_p: float = 0.9
  sample_seed: int = 0
  validation_batches: int = 8  # batches of the validation stream for validation loss
  # How per-length curves become well-learned / performance-preserving digits, and how dlength
  # is measured: `metrics.LEARNED_DIGITS_RULES` / `metrics.DLENGTH_RULES` ("official" and
  # "total" are how the paper's LLM tables were scored).
  learned_digits_rule: str = metrics.DEFAULT_LEARNED_DIGITS_RULE
  dlength_rule: str = metrics.DEFAULT_DLENGTH_RULE
  # Position ids of the evaluated tokens (`evaluation.positions.RULES`): "consecutive", the
  # paper's; "training", drawn as a PE with random_positions draws them in training;
  # "training_longest", drawn so for the longest answer of the question's length.
  positions: str = positions_lib.DEFAULT_RULE

  def __post_init__(self):
    if int(self.every) < 0:
      raise ValueError("config.eval.every must be >= 0 (0 = only at the end)")
    metrics.check_rule(self.learned_digits_rule, metrics.LEARNED_DIGITS_RULES,
                       "config.eval.learned_digits_rule")
    metrics.check_rule(self.dlength_rule, metrics.DLENGTH_RULES, "config.eval.dlength_rule")
    metrics.check_rule(self.positions, positions_lib.RULES, "config.eval.positions")
    for name in ("digits", "beyond_digits", "tasks"):  # lists from config.json: tuples
      object.__setattr__(self, name, tuple(getattr(self, name)))
    object.__setattr__(self, "task_digits", _task_ranges(self.task_digits))

  @classmethod
  def from_config(cls, config) -> Eval:
    return settings.read(config, "eval", cls)


def _task_ranges(task_digits) -> dict[str, tuple[int, int]]:
  """`task_digits` with canonical task names and (lo, hi) ranges; ValueError otherwise."""
  out = {}
  for name, digits in dict(task_digits).items():
    try:
      task = tasks_lib.get(name).name
    except ValueError as e:
      raise ValueError(f"config.eval.task_digits: {e}") from None
    pair = tuple(digits) if isinstance(digits, (list, tuple)) else ()
    if not (len(pair) == 2 and all(isinstance(d, int) for d in pair) and 1 <= pair[0] <= pair[1]):
      raise ValueError(f"config.eval.task_digits[{name!r}] must be (lo, hi), whole numbers "
                       f"with 1 <= lo <= hi, got {digits!r}")
    out[task] = pair
  return out


def task_lengths(task: str, digits: Sequence[int],
                 task_digits: Mapping[str, Sequence[int]] | None = None) -> list[int]:
  """The task's frozen test lengths an evaluation scores: those inside the task's own range of
  `task_digits` where it has one, else inside `digits` (inclusive ranges)."""
  lo, hi = (task_digits or {}).get(task, digits)
  return [d for d in tasks_lib.get(task).test_digits if lo <= d <= hi]
