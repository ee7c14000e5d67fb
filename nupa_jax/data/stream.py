"""Index arithmetic of a sample stream: index -> (cell, random generators), and pools.

Everything random about sample `i` of a stream comes from counter-based generators: Philox
keyed by `SeedSequence([seed, stream, purpose])` with the sample's integers as its counter
(the same idea as `np.random.default_rng([seed, stream, purpose, i])`, at half the cost). No
global state, no dependence on which process or worker asks, so any sample (and any batch) can
be recomputed from the config and its index alone, and a checkpoint of the pipeline is one
integer.

Stratification: sample `i` sits in global batch `s = i // B` at place `q = i % B`. Each batch
is a *systematic sample* of the mixture: one uniform offset `u_s` per batch, and place `q`
takes the point `(u_s + t_s(q)) / B` of the mixture's cumulative distribution, where the
stratum `t_s(q)` is the mixed-radix digit reversal of `q` over B's prime factors (bit reversal
when B is a power of two) after a random per-batch offset of each digit (`strata`). So every
cell's count in a batch is within one of `B p`; the cell of any one sample is distributed as
the mixture; and every aligned block of k consecutive places, k a product of B's smallest
prime factors (any power of two dividing B = 256), is itself a systematic sample: a packed
row holds a spread of lengths, its token count varies little and rows can be sized tightly.
None of this depends on how batches are cut into rows.

A finite pool (`pool_size`) is the first `pool_size` samples of this stream; the emitted
sample `i` is pool element `perm_e(i mod pool_size)` with a fresh permutation for every epoch
`e = i // pool_size` (grain's `index_shuffle`, a bijection computed per index).
"""
from __future__ import annotations

import dataclasses
import functools

import grain
import numpy as np

from nupa_jax.data import mixture as mixture_lib

TRAIN, VALIDATION = 0, 1  # stream ids: the seed spaces of training and validation never meet
# Purposes (the third seed word): one per independent random decision.
_PURPOSES = range(5)
_MIX, _OPERANDS, _ENCODE, _POOL, _OVERFLOW = _PURPOSES
_SHUFFLE_ROUNDS = 4


def _prime_factors(n: int) -> list[int]:
  out, p = [], 2
  while p * p <= n:
    while n % p == 0:
      out.append(p)
      n //= p
    p += 1
  return out + ([n] if n > 1 else [])


@functools.lru_cache(maxsize=16)
def _radix(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Prime factors of n (ascending), the mixed-radix digits [n, factors] of every q < n (least
  significant first, in base factors[0]), and the reversed place values of those digits."""
  factors = np.array(_prime_factors(n) or [1], np.int64)
  digits = np.zeros((n, len(factors)), np.int64)
  q = np.arange(n)
  for i, p in enumerate(factors):
    digits[:, i] = q % p
    q //= p
  weights = n // np.cumprod(factors)  # digit i weighs n / (p_0 ... p_i)
  return factors, digits, weights


def strata(n: int, rng: np.random.Generator | None = None) -> np.ndarray:
  """A bijection of [0, n): place q -> stratum, the mixed-radix digit reversal of q after
  adding a random offset to each digit (mod its base; no offset without `rng`).

  Reversal sends every aligned block of k consecutive places, k a product of n's smallest
  prime factors, to k strata spaced n / k apart; the digit offsets (which map aligned blocks
  onto aligned blocks) make the stratum of any fixed place uniform over [0, n).
  """
  factors, digits, weights = _radix(n)
  offsets = np.zeros(len(factors), np.int64) if rng is None else rng.integers(factors)
  return (digits + offsets) % factors @ weights


@dataclasses.dataclass(frozen=True)
class Draw:
  """What to generate for one emitted sample: its cell and where its randomness comes from."""
  cell: int
  operands: np.random.Generator  # task.sample (and test-set redraws) read from this ...
  encode: np.random.Generator  # ... then the encoder (random cuts, hint offsets) from this;
  # the same generator, read in that order, except for pool elements


@dataclasses.dataclass(frozen=True)
class Stream:
  """Sample index -> Draw, for one (seed, stream id) under a mixture, batch size and pool."""
  mixture: mixture_lib.Mixture
  batch_size: int
  seed: int
  stream: int
  pool_size: int | None = None

  def __post_init__(self):
    if self.batch_size < 1:
      raise ValueError(f"batch size must be >= 1, got {self.batch_size}")
    if self.pool_size is not None and self.pool_size < 1:
      raise ValueError(f"config.data.pool_size must be None (infinite) or >= 1, "
                       f"got {self.pool_size}")

  @functools.cached_property
  def _keys(self) -> list[np.ndarray]:
    return [np.random.SeedSequence([self.seed, self.stream, purpose]).generate_state(2, np.uint64)
            for purpose in _PURPOSES]

  def rng(self, purpose: int, *ints: int) -> np.random.Generator:
    """The generator of (purpose, ints): Philox at counter (0, *ints), up to three ints, each
    < 2**64. Draws advance the lowest counter word, so generators never overlap."""
    counter = [0, *ints] + [0] * (3 - len(ints))
    return np.random.Generator(np.random.Philox(counter=counter, key=self._keys[purpose]))

  def _cells(self, start: int, stop: int) -> np.ndarray:
    """Cells of base-stream samples [start, stop), which lie in one batch."""
    batch, first = divmod(start, self.batch_size)
    rng = self.rng(_MIX, batch)
    u = rng.random()
    places = strata(self.batch_size, rng)[first:first + stop - start]
    return self.mixture.cell((u + places) / self.batch_size)

  def pool_element(self, index: int) -> int:
    """Base-stream index of emitted sample `index` (itself when the stream has no pool)."""
    if self.pool_size is None:
      return index
    epoch, position = divmod(index, self.pool_size)
    if self.pool_size == 1:
      return 0
    seed = int(self.rng(_POOL, epoch).integers(2**32))
    return grain.experimental.index_shuffle(position, max_index=self.pool_size - 1,
                                            seed=seed, rounds=_SHUFFLE_ROUNDS)

  def _pool_draw(self, element: int, index: int, *attempt: int) -> Draw:
    """Pool element `element` emitted as sample `index`: its operands are the element's, its
    encoding (random tokenizer cuts, hint offsets) fresh for every emission."""
    return Draw(int(self._cells(element, element + 1)[0]), self.rng(_OPERANDS, element),
                self.rng(_ENCODE, index, *attempt))

  def draws(self, start: int, stop: int) -> list[Draw]:
    """Draws of emitted samples [start, stop) (any range, across batches too)."""
    out = []
    while start < stop:
      end = min(stop, (start // self.batch_size + 1) * self.batch_size)
      if self.pool_size is None:
        for i, cell in zip(range(start, end), self._cells(start, end)):
          rng = self.rng(_OPERANDS, i)
          out.append(Draw(int(cell), rng, rng))
      else:
        out += [self._pool_draw(self.pool_element(i), i) for i in range(start, end)]
      start = end
    return out

  def replacement(self, index: int, attempt: int) -> Draw:
    """A substitute for sample `index` (attempt >= 1) when it does not fit its packed row.

    Drawn from the mixture itself (from the pool, if any), not from the sample's stratum, so
    that a row too long for its stratified lengths can take a shorter sample.
    """
    rng = self.rng(_OVERFLOW, index, attempt)
    if self.pool_size is None:
      return Draw(int(self.mixture.cell(rng.random())), rng, rng)
    return self._pool_draw(int(rng.integers(self.pool_size)), index, attempt)
