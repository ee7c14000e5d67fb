"""Mixture resolution: task weights, digit ranges, length weights, dropping and reordering."""
import collections

import numpy as np
import pytest

from nupa_jax import tasks
from nupa_jax.data import mixture

RESOLVE = dict(known=tasks.names(), canonical=lambda n: tasks.get(n).name,
               max_digits=lambda n: tasks.get(n).max_digits)


def shares(m: mixture.Mixture) -> dict[tuple[str, int], float]:
  return {(t, n): p for t, n, p in zip(m.tasks, m.lengths, m.probs)}


def test_weights_and_uniform_lengths():
  m = mixture.resolve({"add_int": 3.0, "sub_int": 1.0}, (2, 5), **RESOLVE)
  got = shares(m)
  assert len(got) == 8
  for length in range(2, 6):
    assert got["add_int", length] == pytest.approx(3 / 4 / 4)
    assert got["sub_int", length] == pytest.approx(1 / 4 / 4)


def test_aliases_merge_and_all_covers_every_task():
  m = mixture.resolve({"multiply_int": 1.0, "multiply_hard_int": 1.0,
                       "add_Integer_Integer_Integer": 2.0}, (1, 1), **RESOLVE)
  assert shares(m) == pytest.approx({("add_int", 1): 0.5, ("multiply_hard_int", 1): 0.5})
  every = mixture.resolve({"all": 1.0}, (1, 2), **RESOLVE)
  assert set(every.tasks) == set(tasks.names())
  assert np.allclose(list(every.task_probs().values()), 1 / len(tasks.names()))


def test_per_task_digits_and_length_weights():
  m = mixture.resolve({"add_int": 1.0, "max_int": 1.0}, {"max_int": (10, 12), "*": (1, 3)},
                      {1: 1.0, 3: 3.0, 11: 2.0}, **RESOLVE)
  assert shares(m) == pytest.approx({("add_int", 1): 0.5 / 4, ("add_int", 3): 0.5 * 3 / 4,
                                     ("max_int", 11): 0.5})


def test_length_weights_default_entry_weighs_the_lengths_not_named():
  # String keys, as a ConfigDict stores them: lengths 1 and 2 rare, every other length 1.
  m = mixture.resolve({"add_int": 1.0, "max_int": 1.0}, {"max_int": (10, 11), "*": (1, 4)},
                      {"1": 0.5, "2": 0.5, "*": 1.0}, **RESOLVE)
  assert shares(m) == pytest.approx({("add_int", 1): 0.5 * 0.5 / 3, ("add_int", 2): 0.5 * 0.5 / 3,
                                     ("add_int", 3): 0.5 / 3, ("add_int", 4): 0.5 / 3,
                                     ("max_int", 10): 0.25, ("max_int", 11): 0.25})


@pytest.mark.parametrize("kwargs, message", [
    (dict(tasks={"add_itn": 1.0}), "did you mean add_int"),
    (dict(tasks={"add_int": 1.0}, train_digits=(1, 21)), "lower hi to 20"),
    (dict(tasks={"add_int": 0.0}), "no positive weight"),
    (dict(tasks={"add_int": -1.0}), "must be >= 0"),
    (dict(tasks={"add_int": 1.0}, train_digits={"sub_int": (1, 2)}), "add it or a default"),
    (dict(tasks={"add_int": 1.0}, length_weights={9: 1.0}), "no positive weight on its"),
])
def test_errors_name_the_fix(kwargs, message):
  with pytest.raises(ValueError, match=message):
    mixture.resolve(**kwargs, **RESOLVE)


def test_without_keeps_task_shares():
  m = mixture.resolve({"add_int": 1.0, "sub_int": 3.0}, (1, 4), **RESOLVE)
  dropped = m.without({("add_int", 1), ("add_int", 2)})
  assert dropped.task_probs() == pytest.approx({"add_int": 0.25, "sub_int": 0.75})
  assert shares(dropped)["add_int", 3] == pytest.approx(0.125)
  with pytest.raises(ValueError, match="used up by the frozen test set"):
    m.without({("add_int", n) for n in range(1, 5)})


def test_sorted_by_moves_cells_with_their_probabilities():
  m = mixture.resolve({"add_int": 1.0, "sub_int": 3.0}, (1, 3), **RESOLVE)
  keys = [5.0, 1.0, 3.0, 2.0, 2.0, 0.0]
  reordered = m.sorted_by(keys)
  assert shares(reordered) == pytest.approx(shares(m))
  assert [keys[list(zip(m.tasks, m.lengths)).index(c)]
          for c in zip(reordered.tasks, reordered.lengths)] == sorted(keys)


def test_cell_inverts_the_cumulative_distribution():
  m = mixture.resolve({"add_int": 1.0}, (1, 4), {1: 1.0, 2: 1.0, 3: 2.0}, **RESOLVE)
  u = (np.arange(4000) + 0.5) / 4000
  counts = collections.Counter(m.cell(u).tolist())
  assert [counts[i] for i in range(3)] == [1000, 1000, 2000]
