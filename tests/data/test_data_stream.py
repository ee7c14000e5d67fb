"""Stream index arithmetic: stratified batches, marginal weights, pools, disjoint streams."""
import math

import numpy as np
import pytest

from nupa_jax import tasks
from nupa_jax.data import mixture as mixture_lib
from nupa_jax.data import stream as stream_lib

RESOLVE = dict(known=tasks.names(), canonical=lambda n: tasks.get(n).name,
               max_digits=lambda n: tasks.get(n).max_digits)
# Awkward shares (not multiples of 1/B) so that counts must round.
MIXTURE = mixture_lib.resolve({"add_int": 5.0, "max_int": 2.0, "sub_float": 1.0}, (1, 3),
                              {1: 1.0, 2: 1.5, 3: 3.0}, **RESOLVE)


def cells(stream, start, stop):
  return np.array([d.cell for d in stream.draws(start, stop)])


@pytest.mark.parametrize("n", [1, 7, 12, 96, 256])
def test_strata_spread_aligned_blocks(n):
  rng = np.random.default_rng(0)
  for offsets in (None, rng, rng):
    strata = stream_lib.strata(n, offsets)
    assert sorted(strata.tolist()) == list(range(n))
    k = 1
    for p in sorted(_factors(n)):  # blocks of the product of the smallest prime factors
      k *= p
      for start in range(0, n, k):
        block = np.sort(strata[start:start + k])
        assert (np.diff(block) == n // k).all(), (n, k, start)


def test_strata_of_a_place_are_uniform():
  n, draws = 12, 6000
  rng = np.random.default_rng(1)
  got = np.array([stream_lib.strata(n, rng)[5] for _ in range(draws)])
  counts = np.bincount(got, minlength=n)
  sigma = math.sqrt(draws / n * (1 - 1 / n))
  assert (np.abs(counts - draws / n) < 4.5 * sigma).all(), counts


def _factors(n):
  out, p = [], 2
  while n > 1:
    while n % p == 0:
      out.append(p)
      n //= p
    p += 1
  return out


@pytest.mark.parametrize("batch_size, row", [(256, 16), (96, 8)])
def test_batches_and_rows_hold_each_cell_within_one_of_its_share(batch_size, row):
  stream = stream_lib.Stream(MIXTURE, batch_size, seed=3, stream=stream_lib.TRAIN)
  for batch in range(3):
    got = cells(stream, batch * batch_size, (batch + 1) * batch_size)
    counts = np.bincount(got, minlength=len(MIXTURE))
    assert (np.abs(counts - batch_size * MIXTURE.probs) < 1).all()
    for start in range(0, batch_size, row):
      counts = np.bincount(got[start:start + row], minlength=len(MIXTURE))
      assert (np.abs(counts - row * MIXTURE.probs) < 1).all()


def test_each_place_alone_follows_the_mixture():
  """The cell of a fixed place of the batch, over many batches, is a draw of the mixture."""
  batch_size, batches = 8, 1500
  stream = stream_lib.Stream(MIXTURE, batch_size, seed=0, stream=stream_lib.TRAIN)
  for place in (0, 5):
    got = np.array([cells(stream, b * batch_size + place, b * batch_size + place + 1)[0]
                    for b in range(batches)])
    freq = np.bincount(got, minlength=len(MIXTURE)) / batches
    sigma = np.sqrt(MIXTURE.probs * (1 - MIXTURE.probs) / batches)
    assert (np.abs(freq - MIXTURE.probs) < 4.5 * sigma).all(), (freq, MIXTURE.probs)


def test_same_seed_same_draws_other_seed_or_split_differs():
  def operands(seed, split):
    stream = stream_lib.Stream(MIXTURE, 16, seed=seed, stream=split)
    return [(d.cell, d.operands.integers(2**62)) for d in stream.draws(10, 40)]
  train = operands(0, stream_lib.TRAIN)
  assert train == operands(0, stream_lib.TRAIN)
  assert train != operands(1, stream_lib.TRAIN)
  assert train != operands(0, stream_lib.VALIDATION)


def test_draws_do_not_depend_on_how_the_range_is_cut():
  stream = stream_lib.Stream(MIXTURE, 12, seed=0, stream=stream_lib.TRAIN)
  whole = [(d.cell, d.operands.random()) for d in stream.draws(5, 40)]
  pieces = [(d.cell, d.operands.random())
            for a, b in [(5, 11), (11, 12), (12, 33), (33, 40)] for d in stream.draws(a, b)]
  assert whole == pieces


def test_pool_reshuffles_the_same_elements_every_epoch():
  pool = 37
  stream = stream_lib.Stream(MIXTURE, 16, seed=0, stream=stream_lib.TRAIN, pool_size=pool)
  epochs = [[stream.pool_element(e * pool + p) for p in range(pool)] for e in range(3)]
  for epoch in epochs:
    assert sorted(epoch) == list(range(pool))
  assert epochs[0] != epochs[1] != epochs[2]
  # An emitted sample is its pool element: same cell and operands as the base stream's.
  base = stream_lib.Stream(MIXTURE, 16, seed=0, stream=stream_lib.TRAIN)
  for i, draw in zip(range(40, 60), stream.draws(40, 60)):
    element = base.draws(stream.pool_element(i), stream.pool_element(i) + 1)[0]
    assert (draw.cell, draw.operands.random()) == (element.cell, element.operands.random())


def test_replacements_differ_by_attempt_and_stay_in_the_pool():
  stream = stream_lib.Stream(MIXTURE, 16, seed=0, stream=stream_lib.TRAIN)
  values = {stream.replacement(5, attempt).operands.random() for attempt in range(1, 20)}
  assert len(values) == 19
  pooled = stream_lib.Stream(MIXTURE, 16, seed=0, stream=stream_lib.TRAIN, pool_size=10)
  base_values = {d.operands.random() for d in stream.draws(0, 10)}
  for attempt in range(1, 20):
    assert pooled.replacement(5, attempt).operands.random() in base_values


def test_generators_of_neighbouring_indices_are_independent():
  stream = stream_lib.Stream(MIXTURE, 16, seed=0, stream=stream_lib.TRAIN)
  first = np.array([d.operands.random(64) for d in stream.draws(0, 200)])
  # No two samples share a run of draws (overlapping counters would repeat values).
  assert len(np.unique(first)) == first.size
  assert abs(np.corrcoef(first[:-1, 0], first[1:, 0])[0, 1]) < 4 / math.sqrt(199)
