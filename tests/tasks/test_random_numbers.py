"""The exact random number primitives behind task sampling."""
import collections
import math

import numpy as np
import pytest

from nupa_jax.tasks import random_numbers as rn


def assert_uniform(counts: collections.Counter, support: range, draws: int) -> None:
  """Every value of `support` seen, each within 5 standard errors of draws / len(support)."""
  assert set(counts) == set(support)
  p = 1 / len(support)
  bound = 5 * math.sqrt(p * (1 - p) / draws)
  assert all(abs(counts[v] / draws - p) < bound for v in support), counts


@pytest.mark.parametrize("n", [1, 6, 10, 2**64 - 1, 2**64, 2**64 + 7, 10**30, 10**250])
def test_randbelow_range_and_uniform_residues(n):
  rng, draws = np.random.default_rng(n % 1000), 6000
  values = [rn.randbelow(rng, n) for _ in range(draws)]
  assert all(0 <= v < n for v in values)
  if n > 1:
    buckets = n if n <= 10 else 7  # equal-sized buckets up to a negligible remainder
    assert_uniform(collections.Counter(v * buckets // n for v in values), range(buckets), draws)


def test_integers_cover_exactly_their_length():
  rng, draws = np.random.default_rng(0), 6000
  assert_uniform(collections.Counter(int(rn.integer(rng, 1)) for _ in range(draws)), range(10),
                 draws)
  leading = collections.Counter()
  for _ in range(draws):
    text = rn.integer(rng, 40)
    assert len(text) == 40
    leading[int(text[0])] += 1
  assert_uniform(leading, range(1, 10), draws)
  assert all(rn.positive_integer(rng, 1) != "0" for _ in range(500))


def test_floats_have_length_decimals_and_uniform_integer_digits():
  rng, draws, length = np.random.default_rng(1), 6000, 6
  int_digits, last = collections.Counter(), collections.Counter()
  for _ in range(draws):
    whole, dec = rn.float_(rng, length).split(".")
    assert len(dec) == length and not whole.startswith("0")
    int_digits[len(whole)] += 1
    last[int(dec[-1])] += 1
  assert_uniform(int_digits, range(1, length + 1), draws)
  assert_uniform(last, range(1, 10), draws)


@pytest.mark.parametrize("length", [1, 2, 9])
def test_fractions_are_reduced_with_length_digit_denominators(length):
  rng = np.random.default_rng(length)
  for _ in range(500):
    num, den = rn.fraction(rng, length)
    assert math.gcd(num, den) == 1 and len(str(den)) == length and num < 10**length


def test_scientific_parts_and_exponent_range():
  rng, draws = np.random.default_rng(2), 6000
  leads, exponents = collections.Counter(), collections.Counter()
  for _ in range(draws):
    lead, dec, exponent = rn.scientific(rng, 4)
    assert len(dec) == 4 and dec[-1] != "0"
    leads[int(lead)] += 1
    exponents[exponent // 10] += 1
  assert_uniform(leads, range(1, 10), draws)
  assert_uniform(exponents, range(10), draws)
  assert max(rn.scientific(rng, 1)[2] for _ in range(500)) == 9


def test_shorter_length_and_swap():
  rng, draws = np.random.default_rng(3), 6000
  lengths, swaps = collections.Counter(), 0
  for _ in range(draws):
    short, swap = rn.shorter_length_and_swap(rng, 9)
    lengths[short] += 1
    assert not (swap and short == 9)
    swaps += swap
  assert_uniform(lengths, range(4, 10), draws)
  unequal = draws - lengths[9]
  assert abs(swaps / unequal - 0.5) < 5 * math.sqrt(0.25 / unequal)
  assert rn.shorter_length_and_swap(rng, 1) == (1, False)
