"""configs/paper.py, the paper's training protocol as recipes: the distinct-question counts
behind its length mix (counted by drawing), its budgets, and each protocol factor's fields."""
import math

import numpy as np
import pytest

from configs import paper
from nupa_jax import tasks

# Draws per cell: enough that a cell of N equally likely questions misses none (N ln N x 2).
DRAWS = {("add_int", 1): 5_000, ("add_int", 2): 150_000, ("add_float", 1): 100_000,
         ("multiply_easy_frac", 1): 60_000}


@pytest.mark.parametrize("task, length", sorted(DRAWS))
def test_distinct_question_counts_are_what_the_generators_draw(task, length):
  t = tasks.get(task)
  rng = np.random.default_rng(0)
  seen = {str(t.sample(rng, length)) for _ in range(DRAWS[task, length])}
  assert len(seen) == paper.distinct_questions(task, length)


def _operand_count(length: int) -> int:
  return 10 if length == 1 else 9 * 10**(length - 1)  # a one-digit operand may be 0


def test_three_digit_integer_count_is_what_the_generator_draws():
  """Too many questions to count by drawing (990,000): the draws give the operands' lengths
  and one-digit values, which the count multiplies out."""
  rng = np.random.default_rng(0)
  draws = [tasks.get("add_int").sample(rng, 3) for _ in range(20_000)]
  shapes = {(len(a), len(b)) for a, b in draws}
  assert shapes == {(3, 3), (2, 3), (3, 2), (1, 3), (3, 1)}
  assert {x for pair in draws for x in pair if len(x) == 1} == set("0123456789")
  assert paper.distinct_questions("add_int", 3) == sum(
      _operand_count(la) * _operand_count(lb) for la, lb in shapes)


def test_one_digit_scientific_count_is_what_the_generator_draws():
  rng = np.random.default_rng(0)
  draws = [tasks.get("add_sci").sample(rng, 1) for _ in range(50_000)]
  mantissas = {x.split("e")[0] for pair in draws for x in pair}
  exponents = {(a.split("e")[1], b.split("e")[1]) for a, b in draws}
  assert (len(mantissas), len(exponents)) == (81, 69)
  assert paper.distinct_questions("add_sci", 1) == 81 * 81 * 69


def test_integer_addition_counts_by_hand_and_the_full_budget():
  # Both operands of 1 digit; of 2 with the other of 1 or 2; of 3 with the other of 1 to 3.
  assert paper.DISTINCT_QUESTIONS["add_int"] == {
      1: 10 * 10, 2: 90 * 90 + 2 * 90 * 10, 3: 900 * 900 + 2 * 900 * 90 + 2 * 900 * 10}
  assert paper.full_budget("add_int") == 100 + 9_900 + 990_000 + 5 * 10**7 == 51_000_000
  weights = paper.length_weights("add_int")
  assert weights["1"] == pytest.approx(1e-5) and weights["3"] == pytest.approx(0.099)
  assert all(weights[str(n)] == 1.0 for n in range(4, 9))


def test_tables_set_the_budget_the_questions_and_the_paper_optimizer():
  full = paper.get_config("table=rope_perf")
  assert full.train.steps == math.ceil(51_000_000 / 256) == 199_219
  assert (full.train.learning_rate, full.train.warmup_steps) == (5e-5, 500)
  assert full.eval.per_length == 500 and not full.eval.greedy
  assert tuple(full.eval.digits) == (1, 20) and tuple(full.data.train_digits) == (1, 8)
  small = paper.get_config("table=small_dataset_full,decoding=greedy,mix=uniform")
  assert small.train.steps == math.ceil(10**6 / 256) and small.eval.greedy
  assert dict(small.data.length_weights) == {}
  assert paper.get_config("table=small_model_full,samples=10000000,lr=0.001").train.steps == \
      math.ceil(10**7 / 256)


def test_protocol_factors_each_change_their_own_fields():
  base = paper.get_config("")
  official = paper.get_config("objective=official")
  assert (base.data.packing, base.data.loss_on_padding) == ("packed", False)
  assert (official.data.packing, official.data.loss_on_padding) == ("padded", True)
  assert paper.get_config("warmup=0").train.warmup_steps == 0
  larger = paper.get_config("batch=1024")
  assert (larger.train.batch_size, larger.train.steps) == (1024, 977)  # ceil(10^6 / 1024)
  assert (base.train.batch_size, base.train.steps) == (256, 3907)
  formats = paper.get_config("table=rev_vs_pad,reverse=int,pad=true")
  assert dict(formats.text.format) == {"reverse": "int", "pad": True, "index_hints": False}


def test_random_positions_reach_the_pe_and_only_a_pe_that_has_them():
  c = paper.get_config("table=rev_vs_pad,random_positions=1024")
  assert dict(c.model.posenc) == {"name": "rope", "random_positions": 1024}
  assert "random_positions" not in dict(paper.get_config("table=rev_vs_pad").model.posenc)
  with pytest.raises(ValueError, match="'nope' has no random positions"):
    paper.get_config("pe=nope,random_positions=1024")


@pytest.mark.parametrize("arg, message", [
    ("table=rope", "unknown table 'rope'"),
    ("mix=geometric", "unknown mix"),
    ("task=max_int", "needs its counts in DISTINCT_QUESTIONS"),
    ("batch=-8", "give samples a step"),
])
def test_errors_name_the_fix(arg, message):
  with pytest.raises(ValueError, match=message):
    paper.get_config(arg)
