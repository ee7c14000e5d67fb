"""Test-set exclusion: hashes of the frozen test questions a training stream must never emit.

The frozen test set is a pure function of (seed, task, length) (`benchmark.testset`), so it is
regenerated here rather than read from files. Only lengths a stream can draw matter: a task's
sample at length L has length exactly L (`tasks.Task.sample`), so a training range of 1-8
digits needs the test questions of lengths 3-8 of add_int and no others. A question is keyed by
a 64-bit BLAKE2 hash of (task, a, b) (stable across processes, unlike Python's `hash`); a false
match (probability ~ questions / 2^64) would only cost one extra redraw. The keys are held as one
sorted array (`QuestionKeys`), not a Python set, because the training source that holds them is
pickled for every data worker.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import multiprocessing
from collections.abc import Iterable, Iterator, Set

import numpy as np

from nupa_jax import tasks
from nupa_jax.benchmark import testset


def key(task: str, a: str, b: str | None) -> int:
  """The hash of a question; `task` must be canonical."""
  text = f"{task}\x00{a}\x00{'' if b is None else b}".encode()
  return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


_INTEGERS = (int, np.integer)


class QuestionKeys(Set):
  """A read-only set of question keys stored as one sorted uint64 array.

  Grain pickles the training source once per worker process, serially in the trainer's
  process. 3.2 million keys (the mixed recipe's) take over a second to pickle as a set of
  Python ints and about as long to unpickle; as an array they pickle as one buffer, in
  milliseconds. A lookup is a binary search of a few microseconds, a fraction of what drawing
  and solving a sample takes. Only integers are members (`1.0 in keys` is False).
  """

  def __init__(self, keys: Iterable[int] | np.ndarray = ()):
    if not isinstance(keys, np.ndarray):
      keys = np.fromiter(keys, dtype=np.uint64)
    elif keys.size and keys.dtype.kind != "u":
      raise TypeError(f"question keys are unsigned 64-bit integers, not {keys.dtype}")
    self._keys = np.unique(keys.astype(np.uint64, copy=False))

  def __contains__(self, k) -> bool:
    if not isinstance(k, _INTEGERS) or not 0 <= k < 2**64:
      return False
    k = np.uint64(k)
    i = self._keys.searchsorted(k)
    return bool(i < len(self._keys) and self._keys[i] == k)

  def __iter__(self) -> Iterator[int]:
    return iter(self._keys.tolist())

  def __len__(self) -> int:
    return len(self._keys)

  def __eq__(self, other) -> bool:
    if isinstance(other, QuestionKeys):  # without iterating millions of keys
      return np.array_equal(self._keys, other._keys)
    return super().__eq__(other)

  @classmethod
  def _from_iterable(cls, it: Iterable[int]) -> QuestionKeys:
    return cls(it)


def test_cells(task_lengths: dict[str, Iterable[int]]) -> frozenset[tuple[str, int]]:
  """The (task, length) cells among `task_lengths` that the frozen test set has questions for."""
  return frozenset((name, length) for name, lengths in task_lengths.items()
                   for length in set(lengths) & set(tasks.get(name).test_digits))


# A spawned process first imports the main module (the trainer: jax, flax, grain) before it
# hashes anything, so one is started only for at least this many cells: a recipe of a few tasks
# (tens of cells) hashes in its own process, as it always did.
CELLS_PER_PROCESS = 64

# Cached per process: a pipeline rebuilt with the same tasks (validation, a resumed run) does
# not regenerate the questions. Keyed by (cells, seed, per_length), oldest dropped first.
_CACHE: dict[tuple, tuple[QuestionKeys, frozenset[tuple[str, int]]]] = {}
_CACHE_SIZE = 8


def hashing_processes(cells: int, processes: int) -> int:
  """Processes to hash `cells` cells with, at most `processes`: 0 (in this process) unless
  at least two would each get `CELLS_PER_PROCESS` cells."""
  size = min(processes, cells // CELLS_PER_PROCESS)
  return size if size >= 2 else 0


def _cell_keys(cell: tuple[str, int], seed: int,
               per_length: int) -> tuple[np.ndarray, bool]:
  """The keys of one cell's test questions, and whether the test set exhausts the cell."""
  name, length = cell
  questions = testset.questions(name, length, seed, per_length)
  keys = np.fromiter((key(q.task, q.a, q.b) for q in questions), dtype=np.uint64,
                     count=len(questions))
  return keys, len(questions) < per_length


def hash_cells(cells: frozenset[tuple[str, int]], seed: int = 0, per_length: int = 1000,
               processes: int = 0) -> tuple[QuestionKeys, frozenset[tuple[str, int]]]:
  """`test_hashes` computed afresh, over `hashing_processes(len(cells), processes)` spawned
  processes (spawned: the caller may hold JAX's threads, which a fork would copy mid-flight).
  A process that dies fails the call (`BrokenProcessPool`) rather than leaving it waiting."""
  ordered = sorted(cells)
  work = functools.partial(_cell_keys, seed=seed, per_length=per_length)
  size = hashing_processes(len(ordered), processes)
  keys, exhausted = [np.zeros(0, np.uint64)], set()
  with contextlib.ExitStack() as stack:
    if size:
      pool = stack.enter_context(concurrent.futures.ProcessPoolExecutor(
          size, mp_context=multiprocessing.get_context("spawn")))
      results = pool.map(work, ordered, chunksize=max(1, len(ordered) // (4 * size)))
    else:
      results = map(work, ordered)
    for cell, (cell_keys, short) in zip(ordered, results, strict=True):
      keys.append(cell_keys)
      if short:
        exhausted.add(cell)
  return QuestionKeys(np.concatenate(keys)), frozenset(exhausted)


def test_hashes(cells: frozenset[tuple[str, int]], seed: int = 0, per_length: int = 1000,
                processes: int = 0) -> tuple[QuestionKeys, frozenset[tuple[str, int]]]:
  """Keys of the frozen test questions (benchmark seed, questions per length) of `cells`, and
  the cells the test set exhausts.

  A cell is exhausted when the test set found fewer than `per_length` distinct questions in
  it (`testset.MAX_DRAWS_PER_QUESTION` draws each): it holds (nearly) every question of that
  task and length, so a stream cannot train on it.

  Regenerating is Python-bound: every task over its benchmark range (~3,200 cells, 3.2 million
  questions, the mixed recipe) is most of such a run's start-up in one process, so up to
  `processes` processes share the cells (`hash_cells`). The result does not depend on how
  many; a cached result is returned whatever `processes` is.
  """
  cache_key = (cells, seed, per_length)
  if cache_key not in _CACHE:
    if len(_CACHE) >= _CACHE_SIZE:
      del _CACHE[next(iter(_CACHE))]
    _CACHE[cache_key] = hash_cells(cells, seed, per_length, processes=processes)
  return _CACHE[cache_key]
