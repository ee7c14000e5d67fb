"""Test-set exclusion: hashes of the frozen test questions a training stream must never emit.

The frozen test set is a pure function of (seed, task, length) (`benchmark.testset`), so it is
regenerated here rather than read from files. Only lengths a stream can draw matter: a task's
sample at length L has length exactly L (`tasks.Task.sample`), so a training range of 1-8
digits needs the test questions of lengths 3-8 of add_int and no others. A question is keyed by
a 64-bit BLAKE2 hash of (task, a, b) (stable across processes, unlike Python's `hash`); a false
match (probability ~ questions / 2^64) would only cost one extra redraw.
"""
from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable

from nupa_jax import tasks
from nupa_jax.benchmark import testset


def key(task: str, a: str, b: str | None) -> int:
  """The hash of a question; `task` must be canonical."""
  text = f"{task}\x00{a}\x00{'' if b is None else b}".encode()
  return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


def test_cells(task_lengths: dict[str, Iterable[int]]) -> frozenset[tuple[str, int]]:
  """The (task, length) cells among `task_lengths` that the frozen test set has questions for."""
  return frozenset((name, length) for name, lengths in task_lengths.items()
                   for length in set(lengths) & set(tasks.get(name).test_digits))


@functools.lru_cache(maxsize=8)
def test_hashes(cells: frozenset[tuple[str, int]], seed: int = 0, per_length: int = 1000
                ) -> tuple[frozenset[int], frozenset[tuple[str, int]]]:
  """Keys of the frozen test questions (benchmark seed, questions per length) of `cells`, and
  the cells the test set exhausts.

  A cell is exhausted when the test set found fewer than `per_length` distinct questions in
  it (`testset.MAX_DRAWS_PER_QUESTION` draws each): it holds (nearly) every question of that
  task and length, so a stream cannot train on it. Cached per process: a pipeline rebuilt with
  the same tasks (validation, a resumed run) does not regenerate the questions.
  """
  keys, exhausted = set(), set()
  for name, length in sorted(cells):
    questions = testset.questions(name, length, seed, per_length)
    keys.update(key(q.task, q.a, q.b) for q in questions)
    if len(questions) < per_length:
      exhausted.add((name, length))
  return frozenset(keys), frozenset(exhausted)
