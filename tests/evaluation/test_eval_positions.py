"""Evaluation position ids: the rule that draws them as randomized-position training does, and
the setting that picks it (the evaluator's use of them: test_evaluator.py)."""
import collections
import itertools

import numpy as np
import pytest

from nupa_jax.evaluation import positions as positions_lib
from nupa_jax.evaluation import results as results_lib
from nupa_jax.evaluation import settings as settings_lib


def test_ids_as_in_training_are_sorted_subsets_of_the_range_for_prompt_and_budget():
  lengths = np.array([3, 10, 1], np.int32)
  ids = positions_lib.as_in_training(lengths, 5, 20, 64, (0, 1))
  assert ids.shape == (3, 20) and ids.dtype == np.int32
  for row, length in zip(ids, lengths):
    used = row[:length + 5]
    assert (np.diff(used) > 0).all() and used.min() >= 0 and used.max() < 64
    assert (row[length + 5:] == 63).all()  # never read by the decoder
  again = positions_lib.as_in_training(lengths, 5, 20, 64, (0, 1))
  np.testing.assert_array_equal(ids, again)
  assert (positions_lib.as_in_training(lengths, 5, 20, 64, (0, 2)) != ids).any()
  # A row longer than the range takes all of it: ids 0..M-1.
  np.testing.assert_array_equal(positions_lib.as_in_training(np.array([9]), 5, 16, 12, (0,)),
                                [list(range(12)) + [11] * 4])


def test_ids_as_in_training_are_uniform_over_subsets():
  """Every 2-subset of [0, 5) equally often (10 of them; 4,000 draws, ~400 each)."""
  counts = collections.Counter()
  for seed in range(2000):
    ids = positions_lib.as_in_training(np.array([1, 1]), 1, 2, 5, (seed,))
    counts.update(tuple(row) for row in ids)
  assert set(counts) == set(itertools.combinations(range(5), 2))
  assert max(counts.values()) < 480 and min(counts.values()) > 320  # ~4 standard deviations


def test_the_setting_names_its_choices_and_the_file_name_keeps_them_apart():
  assert settings_lib.Eval().positions == "consecutive"
  with pytest.raises(ValueError, match=r"positions='random': expected one of "
                     r"\['consecutive', 'training'\]"):
    settings_lib.Eval(positions="random")
  assert results_lib.evaluation_name(7, True, 100) == "step_7_greedy_100q.json"
  assert results_lib.evaluation_name(7, True, 100, ["add_int"], "training") == (
      "step_7_greedy_100q_add_int_training-positions.json")
