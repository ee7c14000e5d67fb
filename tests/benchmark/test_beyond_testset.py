"""Questions past the benchmark's range (length generalization): exact against Python ints and
Decimals, deterministic in the seed, refused with the limit for tasks that do not extend, and
the benchmark's own cells unchanged."""
import decimal
import hashlib
import zlib

import ml_collections
import numpy as np
import pytest

from nupa_jax import metrics
from nupa_jax import tasks
from nupa_jax.benchmark import testset
from nupa_jax.data import settings

# sha256 over the JSON lines of these cells (seed 0, 50 questions each), computed with the
# test-set code of commit 6f58c0d, before lengths past the benchmark existed: the frozen test
# set must not move when the generator learns longer lengths.
FROZEN_CELLS = [("add_int", 20), ("add_int", 3), ("max_int", 100), ("add_frac", 20),
                ("add_sci", 7), ("sig_float", 55)]
FROZEN_DIGEST = "972077daf2bf5934d55b541ac819dac75eb1418c5670cf4c32305aa0e0b2fc3e"


def test_benchmark_cells_are_unchanged():
  h = hashlib.sha256()
  for task, length in FROZEN_CELLS:
    for q in testset.questions(task, length, seed=0, per_length=50):
      h.update(q.to_json().encode() + b"\n")
  assert h.hexdigest() == FROZEN_DIGEST


def _int_operands(q):
  a, b = int(q.a), int(q.b)
  assert q.a == str(a) and q.b == str(b)  # canonical integers, no leading zeros
  return a, b


@pytest.mark.parametrize("task, length, oracle", [
    ("add_int", 21, lambda a, b: a + b),
    ("add_int", 100, lambda a, b: a + b),
    ("sub_int", 40, lambda a, b: a - b),
    ("multiply_hard_int", 33, lambda a, b: a * b),
    ("max_int", 150, max),
])
def test_integer_questions_past_the_tier_are_exact(task, length, oracle):
  qs = testset.questions(task, length, seed=0, per_length=40)
  assert len(qs) == 40 and len({(q.a, q.b) for q in qs}) == 40
  for i, q in enumerate(qs):
    a, b = _int_operands(q)
    assert max(len(q.a), len(q.b)) == length
    assert length // 2 <= min(len(q.a), len(q.b))  # the shorter operand: [L/2, L] digits
    assert q.answer == str(oracle(a, b))
    assert (q.id, q.digits, q.bucket) == (f"{task}/{length}/{i}", length, metrics.BEYOND)
    assert q.prompt == tasks.get(task).prompt(q.a, q.b)


def test_float_questions_past_the_tier_are_exact():
  decimal.getcontext().prec = 200
  for q in testset.questions("add_float", 30, seed=0, per_length=30):
    assert len(q.a.split(".")[1]) == 30 or len(q.b.split(".")[1]) == 30
    assert decimal.Decimal(q.answer) == decimal.Decimal(q.a) + decimal.Decimal(q.b)


def test_questions_past_the_tier_are_deterministic_draws_of_their_own_cell():
  first = testset.questions("add_int", 60, seed=3, per_length=20)
  assert first == testset.questions("add_int", 60, seed=3, per_length=20)
  assert first != testset.questions("add_int", 60, seed=4, per_length=20)
  # The documented cell generator, independent of other lengths and tasks.
  rng = np.random.default_rng([3, zlib.crc32(b"add_int"), 60])
  assert (first[0].a, first[0].b) == tasks.get("add_int").sample(rng, 60)
  assert first[:5] == testset.questions("add_int", 60, seed=3, per_length=5)


def test_fraction_and_scientific_tasks_stop_at_their_tier():
  assert testset.max_length("add_int") is None and testset.max_length("max_float") is None
  assert testset.max_length("add_frac") == 20 and testset.max_length("max_sci") == 100
  with pytest.raises(ValueError, match=r"add_frac has questions of 1-20 digits \(its "
                                       r"benchmark range; only int and float tasks"):
    testset.questions("add_frac", 21)
  with pytest.raises(ValueError, match="max_sci has questions of 1-100 digits"):
    testset.questions("max_sci", 101)
  with pytest.raises(ValueError, match="any length >= 1, not 0"):
    testset.questions("add_int", 0)


def _data_settings(task: str, hi: int) -> settings.Settings:
  config = ml_collections.ConfigDict({"data": {"tasks": {task: 1.0}, "train_digits": (1, hi)},
                                      "train": {"batch_size": 16}})
  return settings.Settings.from_config(config)


def test_training_ranges_follow_the_same_limits():
  mixture = _data_settings("add_int", 40).mixture
  assert sorted(set(mixture.lengths)) == list(range(1, 41))
  with pytest.raises(ValueError, match="exceed its 20 digits; lower hi to 20"):
    _data_settings("add_frac", 21)
