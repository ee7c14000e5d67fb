"""The frozen NUPA test set as a pure function of (seed, task, length).

Files written by `python -m nupa_jax.benchmark build` are one serialisation of these questions;
training-time evaluation and the training data's test-set exclusion call `questions` /
`iter_test_set` directly and need no files. Each (task, length) draws from its own generator,
seeded by a stable hash of the task name (never Python's salted `hash`), so a question does not
depend on which other tasks or lengths are built, nor on the order or the process building it.

Past the benchmark. Length-generalization runs (train on 1-20 digits, test to 100) ask for
questions longer than a task's tier (`max_digits`). They come from the same generator and the
same per-(task, length) seeding, so lengths inside the benchmark are unchanged and longer ones
are as deterministic; their bucket is `metrics.BEYOND`. Which tasks extend, by the operands'
representation (`EXTENDING_REPRS`):
- int and float tasks extend to any length: every rule of their generators is stated per
  length L (uniform L-digit integers, floats with L decimals and 1..L integer digits, the
  shorter operand in [L/2, L], mod's divisor of 0.7 L + 1 digits, hard-compare prefixes), so a
  longer L is the same question family at a new size.
- fraction and scientific tasks stop at their tier: the paper caps every fraction task at 20
  digits (max_frac too, whose int / float / sci siblings go to 100), fraction answers grow to
  2-4 L digits and lengths count the reduced pair; scientific exponents stay uniform in 0..99
  (add / sub gaps of at most 5) whatever L, a benchmark constant with no stated rule for
  longer mantissas. Extending them needs those rules decided first.
"""
import json
import zlib
from typing import Iterator, NamedTuple, Sequence

import numpy as np

from nupa_jax import metrics
from nupa_jax import tasks

# Draws allowed per wanted question before a (task, length) stops short: the few lengths with
# fewer distinct questions than asked (1-digit fractions) keep what deduplication leaves, as in
# the paper (Appendix A.1.7).
MAX_DRAWS_PER_QUESTION = 10

FIELDS = ("id", "task", "digits", "bucket", "a", "b", "prompt", "answer")

# Operand representations whose questions extend past the benchmark (module docstring).
EXTENDING_REPRS = ("int", "float")


class Question(NamedTuple):
  """One test question; `b` is None for unary tasks. `id` is `task/digits/index`."""
  id: str
  task: str
  digits: int
  bucket: str
  a: str
  b: str | None
  prompt: str
  answer: str

  def to_json(self) -> str:
    """One line of `test.jsonl` (fields in `FIELDS` order, no newline)."""
    return json.dumps(self._asdict())


def question_rng(seed: int, task_name: str, length: int) -> np.random.Generator:
  """The generator of one (task, length) cell; `task_name` must be canonical."""
  return np.random.default_rng([seed, zlib.crc32(task_name.encode()), length])


def max_length(task: str) -> int | None:
  """The longest question length of `task`: None (no limit) for the tasks that extend past
  the benchmark (`EXTENDING_REPRS`), else its tier `max_digits`."""
  spec = tasks.get(task)
  return None if spec.repr in EXTENDING_REPRS else spec.max_digits


def check_length(task: str, length: int) -> None:
  """Raises ValueError, naming the task's limit, for a length it has no questions of."""
  limit = max_length(task)
  if length < 1 or (limit is not None and length > limit):
    reach = "any length >= 1" if limit is None else (
        f"1-{limit} digits (its benchmark range; only {' and '.join(EXTENDING_REPRS)} tasks "
        "extend past it)")
    raise ValueError(f"{tasks.get(task).name} has questions of {reach}, not {length}")


def questions(task: str, length: int, seed: int = 0, per_length: int = 1000) -> list[Question]:
  """Up to `per_length` distinct questions of `task` at `length` digits.

  Any length from 1 to `task.max_digits` works (evaluation may use lengths the test set leaves
  out for training), and longer ones for the tasks that extend past the benchmark
  (`max_length`; bucket `metrics.BEYOND`); the test set itself uses `task.test_digits`.
  Questions are distinct as (a, b) pairs; a cell whose question space is small stops after
  `MAX_DRAWS_PER_QUESTION * per_length` draws with fewer questions.
  """
  spec = tasks.get(task)
  check_length(spec.name, length)
  rng = question_rng(seed, spec.name, length)
  bucket = metrics.bucket(length, spec.max_digits, beyond=True)
  seen = set()
  out = []
  for _ in range(MAX_DRAWS_PER_QUESTION * per_length):
    if len(out) == per_length:
      break
    a, b = spec.sample(rng, length)
    if (a, b) in seen:
      continue
    seen.add((a, b))
    out.append(Question(f"{spec.name}/{length}/{len(out)}", spec.name, length, bucket, a, b,
                        spec.prompt(a, b), spec.solve(a, b)))
  return out


def resolve_tasks(names: Sequence[str] | None = None) -> list[str]:
  """Canonical task names (aliases accepted) in registry order; all tasks when `names` is None."""
  order = tasks.names()
  if names is None:
    return list(order)
  wanted = {tasks.get(name).name for name in names}
  return [name for name in order if name in wanted]


def iter_test_set(task_names: Sequence[str] | None = None, seed: int = 0,
                  per_length: int = 1000) -> Iterator[Question]:
  """Every question of the test set, task by task (registry order), length by length."""
  for name in resolve_tasks(task_names):
    for length in tasks.get(name).test_digits:
      yield from questions(name, length, seed, per_length)
