"""Test-set exclusion: no emitted question is a frozen test question; redraws are counted."""
import itertools
import pickle
import random

import numpy as np
import pytest

import data_testing
from nupa_jax import data
from nupa_jax import tasks
from nupa_jax.benchmark import testset
from nupa_jax.data import exclusion

# 1-digit fraction additions: a few thousand questions, so a 100-question test set is hit
# by ~10% of draws.
SMALL = dict(tasks={"add_frac": 1.0}, train_digits=(1, 1), test_per_length=100, seq_len=512)


@pytest.fixture(scope="module")
def frozen():
  return {(q.a, q.b) for q in testset.questions("add_frac", 1, seed=0, per_length=100)}


def test_no_emitted_question_is_a_test_question(frozen):
  on = data.Pipeline(data_testing.config(**SMALL))
  off = data.Pipeline(data_testing.config(exclude_test=False, **SMALL))
  n = 192
  kept = on.samples("train", 0, n)
  raw = off.samples("train", 0, n)
  assert not any((q.a, q.b) in frozen for q in kept)
  hits = [i for i, q in enumerate(raw) if (q.a, q.b) in frozen]
  assert len(hits) >= 5  # the small test set does force hits
  # A sample is redrawn exactly where its first draw (the unexcluded stream's) was a hit.
  assert [i for i, q in enumerate(kept) if q.test_redraws] == hits
  assert all(q.test_redraws == 0 for q in raw)
  assert not any((q.a, q.b) in frozen for q in on.samples("validation", 0, n))
  # The iterator counts the same redraws over the same samples (6 batches of 32).
  run = on.train_iterator(process_count=1, process_index=0)
  list(itertools.islice(run, n // 32))
  assert run.stats()["overflow_redraws"] == 0
  assert run.stats()["test_redraws"] == sum(q.test_redraws for q in kept)


def test_exhausted_cells_are_left_out():
  # The test set holds every 1-digit and nearly every 2-digit float conversion of a fraction.
  p = data.Pipeline(data_testing.config(tasks={"to_float_frac": 1.0, "add_int": 1.0},
                                        train_digits=(1, 3), seq_len=512))
  lengths = p.mixture.task_lengths()
  assert lengths["to_float_frac"] == (3,) and sorted(lengths["add_int"]) == [1, 2, 3]
  assert p.mixture.task_probs() == pytest.approx({"to_float_frac": 0.5, "add_int": 0.5})
  with pytest.raises(ValueError, match="used up by the frozen test set"):
    data.Pipeline(data_testing.config(tasks={"to_float_frac": 1.0}, train_digits=(1, 2)))


def test_keys_separate_tasks_and_operand_order():
  keys = {exclusion.key(t, a, b) for t, a, b in [("add_int", "12", "3"), ("add_int", "3", "12"),
                                                  ("sub_int", "12", "3"), ("add_int", "1", "23"),
                                                  ("length_int", "123", None)]}
  assert len(keys) == 5
  assert exclusion.key("add_int", "12", "3") == exclusion.key("add_int", "12", "3")


def test_question_keys_hold_exactly_their_keys():
  rng = random.Random(0)
  members = [rng.getrandbits(64) for _ in range(5000)] + [0, 1, 2**63 - 1, 2**63, 2**64 - 1]
  keys = exclusion.QuestionKeys(members + members[:100])  # duplicates collapse
  assert len(keys) == len(set(members)) and set(keys) == set(members)
  assert all(k in keys for k in members)
  others = {rng.getrandbits(64) for _ in range(5000)} - set(members)
  assert not any(k in keys for k in others)
  assert not any(k in keys for k in [-1, 2**64, 2**65 + members[0], 1.0, "1", None])
  assert keys == set(members) and keys != set(members[1:])
  assert keys == exclusion.QuestionKeys(reversed(members)) != exclusion.QuestionKeys(members[1:])
  with pytest.raises(TypeError, match="unsigned"):
    exclusion.QuestionKeys(np.array([-1, 5]))
  assert 3 not in exclusion.QuestionKeys() and len(exclusion.QuestionKeys()) == 0


def test_question_keys_pickle_as_one_array():
  # What every data worker receives: 8 bytes a key and a small header, the same keys back.
  rng = random.Random(1)
  members = [rng.getrandbits(64) for _ in range(100_000)]
  keys = exclusion.QuestionKeys(members)
  assert len(keys) == len(members)
  pickled = pickle.dumps(keys)
  assert len(pickled) < 8 * len(members) + 1024
  assert pickle.loads(pickled) == keys


def test_only_cells_with_test_questions_are_hashed():
  cells = exclusion.test_cells({"add_int": range(1, 6), "add_frac": [1, 2]})
  assert cells == {("add_int", 3), ("add_int", 4), ("add_int", 5), ("add_frac", 1),
                   ("add_frac", 2)}


@pytest.mark.slow
def test_every_task_at_training_lengths_stays_out_of_the_full_test_set():
  """All tasks, 1-8 digits, the benchmark's 1000 questions a length: 40 batches of 256."""
  c = data_testing.config(tasks={"all": 1.0}, seq_len=0, samples_per_row=16)
  c.train.batch_size = 256
  p = data.Pipeline(c)
  frozen = {(q.task, q.a, q.b) for name in p.mixture.task_lengths()
            for n in tasks.get(name).test_digits if n <= 8
            for q in testset.questions(name, n, 0, 1000)}
  samples = p.samples("train", 0, 40 * 256)
  assert not any((q.task, q.a, q.b) in frozen for q in samples)
  assert sum(q.test_redraws for q in samples) > 0
  shares = {task: sum(q.task == task for q in samples) / len(samples)
            for task in p.mixture.task_probs()}
  # A batch holds each cell within one of its share, but the 8 cells of a task share the
  # batch's systematic offset and may move together: over 40 batches a task's share has a
  # deviation of up to 8 sqrt(0.6 * 0.4 / 40) / 256 = 0.0024.
  assert shares == pytest.approx(p.mixture.task_probs(), abs=0.008)


@pytest.mark.parametrize("cells, processes, expected", [
    (3188, 32, 32), (3188, 0, 0), (200, 32, 3), (127, 8, 0), (128, 8, 2), (1000, 1, 0)])
def test_hashing_processes_each_get_enough_cells(cells, processes, expected):
  assert exclusion.hashing_processes(cells, processes) == expected


def test_hashing_over_processes_matches_one_process():
  # 193 cells (two processes of 64 or more); to_float_frac@1, the one with 22 questions (fewer
  # than 50), sorts between the max_int and to_scient_int cells, so a result given to the
  # wrong cell would move its flag.
  cells = exclusion.test_cells({"max_int": range(1, 101), "to_scient_int": range(1, 101)})
  cells = frozenset(cells | {("to_float_frac", 1)})
  ordered = sorted(cells)
  assert 0 < ordered.index(("to_float_frac", 1)) < len(ordered) - 1
  assert exclusion.hashing_processes(len(cells), 2) == 2
  serial = exclusion.hash_cells(cells, 0, 50, processes=0)
  pooled = exclusion.hash_cells(cells, 0, 50, processes=2)
  assert pooled == serial
  keys, exhausted = pooled
  assert exhausted == {("to_float_frac", 1)}
  expected = {exclusion.key(q.task, q.a, q.b) for name, length in cells
              for q in testset.questions(name, length, 0, 50)}
  assert keys == expected and len(keys) == (len(cells) - 1) * 50 + 22


def test_the_pipeline_hashes_over_its_workers_and_caches_whatever_their_number(monkeypatch):
  calls = []
  real = exclusion.hash_cells
  monkeypatch.setattr(exclusion, "hash_cells",
                      lambda *args, **kwargs: calls.append(kwargs) or real(*args, **kwargs))
  monkeypatch.setattr(exclusion, "_CACHE", {})
  settings = dict(SMALL, tasks={"add_frac": 1.0, "sub_frac": 1.0})
  data.Pipeline(data_testing.config(num_workers=3, **settings))
  assert calls == [{"processes": 3}]
  data.Pipeline(data_testing.config(num_workers=0, **settings))  # the same cells: cached
  assert calls == [{"processes": 3}]
  data.Pipeline(data_testing.config(num_workers=0, **dict(settings, test_per_length=50)))
  assert calls == [{"processes": 3}, {"processes": 0}]
