"""The frozen NUPA test set as a pure function of (seed, task, length).

Files written by `python -m nupa_jax.benchmark build` are one serialisation of these questions;
training-time evaluation and the training data's test-set exclusion call `questions` /
`iter_test_set` directly and need no files. Each (task, length) draws from its own generator,
seeded by a stable hash of the task name (never Python's salted `hash`), so a question does not
depend on which other tasks or lengths are built, nor on the order or the process building it.
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


def questions(task: str, length: int, seed: int = 0, per_length: int = 1000) -> list[Question]:
  """Up to `per_length` distinct questions of `task` at `length` digits.

  Any length from 1 to `task.max_digits` works (evaluation may use lengths the test set leaves
  out for training); the test set itself uses `task.test_digits`. Questions are distinct as
  (a, b) pairs; a cell whose question space is small stops after `MAX_DRAWS_PER_QUESTION *
  per_length` draws with fewer questions.
  """
  spec = tasks.get(task)
  rng = question_rng(seed, spec.name, length)
  bucket = metrics.bucket(length, spec.max_digits)
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
