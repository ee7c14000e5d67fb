"""One training sample from its draw: operands, answer, test-set exclusion, tokens.

`Source.example(draw)` is the whole per-sample work of the pipeline: sample the operands of
the draw's cell with the draw's own generator, redraw (from the same generator, so still
deterministically) while the question is one of the frozen test set's, solve it, and encode it
with the text layer. A Source is pickled into each of grain's worker processes, test-set
hashes included, so workers never regenerate the test set.
"""
from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Collection

import numpy as np

from nupa_jax import tasks
from nupa_jax.data import exclusion
from nupa_jax.data import mixture as mixture_lib
from nupa_jax.data import stream as stream_lib
from nupa_jax.text import Encoder

# Draws of one cell before giving up on finding a question outside the test set.
MAX_TEST_REDRAWS = 1000
CELL_PROBE = 8  # samples per cell that estimate its length (`cell_positions`)


class SampleError(Exception):
  """A question of a stream that cannot be made: its task's sampler or solver, or the encoder,
  failed on it, or the frozen test set holds every question of its cell. A stream is a function
  of the config and the sample's index, so a rerun from any checkpoint stops at the same
  sample. Not a ValueError: no config value is wrong, and a caller that turns ValueErrors into
  config errors must not catch it."""


def _failed(name: str, length: int, question: tuple | None, error: Exception) -> SampleError:
  """`error`, raised while making the question, as a SampleError naming it; a MemoryError is
  raised as it is (the host's state, not the question's)."""
  if isinstance(error, MemoryError):
    raise error
  where = "" if question is None else f" {question!r}"
  return SampleError(f"{name} at {length} digits{where}: {type(error).__name__}: {error}")


@dataclasses.dataclass(frozen=True)
class Sample:
  """A question as text; `test_redraws` counts the test-set questions drawn before it."""
  task: str
  length: int
  a: str
  b: str | None
  answer: str
  test_redraws: int


@dataclasses.dataclass(frozen=True)
class Example:
  """A sample and its encoding, all arrays [n] over the sample's tokens (BOS .. EOS)."""
  sample: Sample
  tokens: np.ndarray  # int32
  loss_mask: np.ndarray  # bool: the answer tokens and EOS
  digit_index: np.ndarray  # int32
  significance: np.ndarray  # int32

  @property
  def slots(self) -> int:
    """Row positions it takes when packed: every token is an input except EOS."""
    return len(self.tokens) - 1


class Source:
  """Turns draws into examples under a mixture, a test-set exclusion set and an encoder."""

  def __init__(self, mixture: mixture_lib.Mixture, encoder: Encoder,
               excluded: Collection[int] = frozenset(),
               excluded_cells: Collection[tuple[str, int]] = frozenset()):
    """`excluded`: question keys (`exclusion.key`) never to emit; `excluded_cells`: the
    (task, length) cells that have test questions at all (others skip hashing)."""
    self.mixture = mixture
    self.encoder = encoder
    self._excluded = excluded
    self._check = np.array([(t, n) in excluded_cells
                            for t, n in zip(mixture.tasks, mixture.lengths)], dtype=bool)

  def sample(self, draw: stream_lib.Draw) -> Sample:
    """The question of a draw, redrawn from the same generator while it is a test question."""
    name, length = self.mixture.tasks[draw.cell], self.mixture.lengths[draw.cell]
    task = tasks.get(name)
    check = self._check[draw.cell]
    try:
      for redraws in range(MAX_TEST_REDRAWS + 1):
        question = None  # a redraw that fails names no question
        question = task.sample(draw.operands, length)
        a, b = question
        if not check or exclusion.key(name, a, b) not in self._excluded:
          return Sample(name, length, a, b, task.solve(a, b), redraws)
    except Exception as e:  # a sampler or solver bug: name the question it failed on
      raise _failed(name, length, question, e) from e
    raise SampleError(
        f"{MAX_TEST_REDRAWS} draws of {name} at {length} digits were all frozen test "
        f"questions; leave {length} out of config.data.train_digits for {name}")

  def example(self, draw: stream_lib.Draw) -> Example:
    sample = self.sample(draw)
    try:
      tokens, loss_mask = self.encoder.encode(sample.task, sample.a, sample.b, sample.answer,
                                              draw.encode)
      positions = self.encoder.positions(sample.task, tokens)
    except Exception as e:  # e.g. an RF-CoT rule whose answer is not the task's
      raise _failed(sample.task, sample.length, (sample.a, sample.b), e) from e
    return Example(sample, tokens, loss_mask, positions["digit_index"],
                   positions["significance"])


def cell_positions(mixture: mixture_lib.Mixture, encoder: Encoder) -> tuple[np.ndarray, int]:
  """Mean positions (tokens - 1) of each cell's samples, and the most any took, from
  `CELL_PROBE` samples a cell drawn with a generator fixed per (task, length): the same for
  every seed and cell order."""
  means, longest = np.zeros(len(mixture)), 0
  for cell, (name, length) in enumerate(zip(mixture.tasks, mixture.lengths)):
    task = tasks.get(name)
    rng = np.random.default_rng([zlib.crc32(name.encode()), length])
    for _ in range(CELL_PROBE):
      question = None
      try:
        question = task.sample(rng, length)
        a, b = question
        positions = len(encoder.encode(name, a, b, task.solve(a, b), rng)[0]) - 1
      except Exception as e:  # deterministic too: the generator is fixed per cell
        raise _failed(name, length, question, e) from e
      means[cell] += positions / CELL_PROBE
      longest = max(longest, positions)
  return means, longest
