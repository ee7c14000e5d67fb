"""Test-set exclusion: hashes of the frozen test questions a training stream must never emit.

The frozen test set is a pure function of (seed, task, length) (`benchmark.testset`), so it is
regenerated here rather than read from files. Only lengths a stream can draw matter: a task's
sample at length L has length exactly L (`tasks.Task.sample`), so a training range of 1-8
digits needs the test questions of lengths 3-8 of add_int and no others. A question is keyed by
a 64-bit BLAKE2 hash of (task, a, b) (stable across processes, unlike Python's `hash`); a false
match (probability ~ questions / 2^64) would only cost one extra redraw.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import multiprocessing
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


# A process of the pool is worth its start-up (a spawned interpreter importing the main module)
# only with at least this many cells to hash: about as long as that start-up takes.
CELLS_PER_PROCESS = 64


def pool_size(cells: int, processes: int) -> int:
  """Processes to hash `cells` cells with, at most `processes`: 0 (in this process) unless
  at least two would each get `CELLS_PER_PROCESS` cells."""
  size = min(processes, cells // CELLS_PER_PROCESS)
  return size if size >= 2 else 0


def _cell_keys(cell: tuple[str, int], seed: int, per_length: int) -> tuple[list[int], bool]:
  """The keys of one cell's test questions, and whether the test set exhausts the cell."""
  name, length = cell
  questions = testset.questions(name, length, seed, per_length)
  return [key(q.task, q.a, q.b) for q in questions], len(questions) < per_length


@functools.lru_cache(maxsize=8)
def test_hashes(cells: frozenset[tuple[str, int]], seed: int = 0, per_length: int = 1000,
                processes: int = 0) -> tuple[frozenset[int], frozenset[tuple[str, int]]]:
  """Keys of the frozen test questions (benchmark seed, questions per length) of `cells`, and
  the cells the test set exhausts.

  A cell is exhausted when the test set found fewer than `per_length` distinct questions in
  it (`testset.MAX_DRAWS_PER_QUESTION` draws each): it holds (nearly) every question of that
  task and length, so a stream cannot train on it. Cached per process: a pipeline rebuilt with
  the same tasks (validation, a resumed run) does not regenerate the questions.

  Regenerating is Python-bound: every task over its benchmark range (~3,200 cells, 3.2 million
  questions, the mixed recipe) is most of such a run's start-up in one process. `processes`
  lets `pool_size` spread the cells over up to that many spawned processes (spawned: the
  caller may hold JAX's threads, which a fork would copy mid-flight); the result does not
  depend on it.
  """
  ordered = sorted(cells)
  work = functools.partial(_cell_keys, seed=seed, per_length=per_length)
  size = pool_size(len(ordered), processes)
  keys, exhausted = set(), set()
  with contextlib.ExitStack() as stack:
    if size:
      pool = stack.enter_context(multiprocessing.get_context("spawn").Pool(size))
      results = pool.imap(work, ordered, chunksize=max(1, len(ordered) // (4 * size)))
    else:
      results = map(work, ordered)
    for cell, (cell_keys, short) in zip(ordered, results):
      keys.update(cell_keys)
      if short:
        exhausted.add(cell)
  return frozenset(keys), frozenset(exhausted)
