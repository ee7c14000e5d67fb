"""Every task against the independent oracle, the registry's contract and the sampling rules."""
import collections
import math
import random
import re

import numpy as np
import oracle
import pytest

from nupa_jax import tasks
from nupa_jax.tasks import arithmetic

# Paper Table 1 (41 tasks), by representation.
TABLE_1 = {
    "int": ["add", "sub", "multiply", "truediv", "floordiv", "mod", "max", "min", "digit_max",
            "digit_min", "digit_add", "get_digit", "length", "count", "to_scient", "sig"],
    "float": ["add", "sub", "multiply", "max", "min", "digit_max", "digit_min", "digit_add",
              "get_digit", "length", "to_scient", "sig"],
    "frac": ["add", "sub", "multiply", "truediv", "max", "min", "to_float"],
    "sci": ["add", "sub", "multiply", "max", "min", "to_float"],
}
VARIANTS = ["add_easy_frac", "mod_easy_int"] + [
    f"{kind}_{r}" for kind in ("max_hard", "min_hard") for r in ("int", "float", "sci")]
# Paper Table 8: the 20-digit tier ("H"); everything else is a 100-digit task.
HARD_TIER = {"add", "sub", "multiply", "truediv", "floordiv", "mod"}
ANSWER_REPR = {"truediv": "frac", "get_digit": "int", "length": "int", "count": "int",
               "to_float": "float", "to_scient": "sci", "sig": "sci"}  # Table 7; else as operand
SYNTAX = {"int": r"\d+", "float": r"\d+\.\d+", "frac": r"\d+/\d+", "sci": r"\d+\.\d+e\d+"}


def expected_names() -> set[str]:
  result = set(VARIANTS)
  for repr_name, kinds in TABLE_1.items():
    for kind in kinds:
      if kind == "multiply":
        result |= {f"multiply_hard_{repr_name}", f"multiply_easy_{repr_name}"}
      else:
        result.add(f"{kind}_{repr_name}")
  return result


def all_tasks():
  return [tasks.get(name) for name in tasks.names()]


def test_names_are_table_1_plus_variants():
  assert len(expected_names()) == 41 - 4 + 8 + len(VARIANTS)
  assert set(tasks.names()) == expected_names()
  assert len(tasks.names()) == len(set(tasks.names()))


def test_kinds_cover_every_task_in_a_fixed_order():
  kinds = tasks.kinds()
  assert len(kinds) == len(set(kinds)) == 22
  assert {tasks.get(n).kind for n in tasks.names()} == set(kinds)
  assert kinds == tasks.kinds()


@pytest.mark.parametrize("alias, name", [
    ("multiply_int", "multiply_hard_int"),
    ("multiply_sci", "multiply_hard_sci"),
    ("add_Integer_Integer_Integer", "add_int"),
    ("get_digit_Float_int_int", "get_digit_float"),
    ("sig_Integer_int_ScientificNotation", "sig_int"),
    ("length_Integer_none_int", "length_int"),
    ("to_float_Fraction_none_Float", "to_float_frac"),
    ("truediv_Integer_Integer_Fraction", "truediv_int"),
    ("min_hard_ScientificNotation_ScientificNotation_ScientificNotation", "min_hard_sci"),
    ("add_int", "add_int"),
])
def test_aliases(alias, name):
  assert tasks.get(alias).name == name


def test_unknown_names_list_close_matches_or_known_names():
  with pytest.raises(ValueError, match="add_int"):
    tasks.get("add_itn")
  with pytest.raises(ValueError, match="known: add_int, add_float"):
    tasks.get("zzz")


@pytest.mark.parametrize("task", all_tasks(), ids=lambda t: t.name)
def test_fields_follow_the_paper(task):
  base = oracle.base_kind(task.kind)
  assert task.name == f"{task.kind}_{task.repr}"
  assert task.answer_repr == ANSWER_REPR.get(base, task.repr)
  tier = 20 if base in HARD_TIER or task.repr == "frac" else 100
  assert task.max_digits == tier
  first = 1 if task.repr == "frac" else (5 if task.repr == "int" and tier == 100 else 3)
  assert task.test_digits == tuple(range(first, tier + 1))
  unary = base in ("length", "to_float", "to_scient")
  assert task.unary == unary
  short = base in ("get_digit", "count", "sig")
  assert task.arg_reprs == ((task.repr,) if unary else
                            (task.repr, "short" if short else task.repr))


@pytest.mark.parametrize("name, digits", [("add_int", (3, 20)), ("max_int", (5, 100)),
                                          ("max_float", (3, 100)), ("add_frac", (1, 20)),
                                          ("max_hard_int", (5, 100)), ("count_int", (5, 100)),
                                          ("multiply_easy_int", (3, 20))])
def test_test_digits_examples(name, digits):
  task = tasks.get(name)
  assert (task.test_digits[0], task.test_digits[-1]) == digits


def check_canonical(answer: str, repr_name: str) -> None:
  """Format invariants: the syntax, no stray zeros, reduced fractions, mantissa in [1, 10)."""
  assert re.fullmatch(SYNTAX[repr_name], answer), answer
  if repr_name == "frac":
    num, den = map(int, answer.split("/"))
    assert math.gcd(num, den) == 1 and str(num) + "/" + str(den) == answer
    return
  whole, _, rest = answer.partition(".")
  assert whole == "0" or not whole.startswith("0"), answer
  if repr_name == "float":
    assert rest == "0" or not rest.endswith("0"), answer
  if repr_name == "sci":
    dec, _, exponent = rest.partition("e")
    assert exponent == "0" or not exponent.startswith("0"), answer
    assert len(whole) == 1 and (whole != "0" or answer == "0.0e0"), answer


def check_questions(task, per_length: int, seed: int) -> None:
  rng = np.random.default_rng(seed)
  lengths = range(1, task.max_digits + 1)
  for length in lengths:
    for _ in range(per_length):
      a, b = task.sample(rng, length)
      assert task.length(a, b) == length, (a, b)
      assert (b is None) == task.unary
      answer = task.solve(a, b)
      assert answer == oracle.answer(task.kind, task.answer_repr, a, b), (a, b)
      if task.kind == "sig":
        assert len(answer.split("e")[0]) == int(b) + 1, (a, b, answer)
      else:
        check_canonical(answer, task.answer_repr)
      assert task.parse_prompt(task.prompt(a, b) + " " + answer) == (a, b, answer)


@pytest.mark.parametrize("task", all_tasks(), ids=lambda t: t.name)
def test_answers_match_oracle(task):
  check_questions(task, per_length=max(2, 300 // task.max_digits), seed=len(task.name))


@pytest.mark.slow
@pytest.mark.parametrize("task", all_tasks(), ids=lambda t: t.name)
def test_answers_match_oracle_thousands(task):
  check_questions(task, per_length=max(50, 5000 // task.max_digits), seed=1000 + len(task.name))


@pytest.mark.parametrize("task", all_tasks(), ids=lambda t: t.name)
def test_sampling_is_deterministic_and_uses_only_the_given_rng(task):
  def draw():
    rng = np.random.default_rng(7)
    return [task.sample(rng, length) for length in (1, 2, 5, task.max_digits)]
  np.random.seed(1)
  random.seed(1)
  first = draw()
  np.random.seed(2)
  random.seed(2)
  assert draw() == first


@pytest.mark.parametrize("length", [0, -3])
def test_sample_rejects_lengths_below_one(length):
  with pytest.raises(ValueError, match="length >= 1"):
    tasks.get("add_int").sample(np.random.default_rng(0), length)


def test_solve_rejects_malformed_operands():
  with pytest.raises(ValueError):
    tasks.get("add_int").solve("1.5", "2")
  with pytest.raises(ValueError, match="negative"):
    tasks.get("sub_int").solve("2", "5")
  with pytest.raises(ValueError, match="position"):
    tasks.get("get_digit_int").solve("123", "3")
  with pytest.raises(ValueError, match="zero"):
    tasks.get("mod_int").solve("12", "0")
  with pytest.raises(ValueError, match="no exact float"):
    tasks.get("to_float_frac").solve("1/3", None)


def test_paper_examples():
  """Appendix A.1.3's worked example of each kind, through prompt and solve."""
  examples = [("add_float", "93.81", "9.976", "103.786"), ("add_frac", "3/8", "2/5", "31/40"),
              ("add_sci", "9.92e16", "9.731e18", "9.8302e18"),
              ("sub_sci", "9.731e38", "9.92e36", "9.6318e38"),
              ("multiply_hard_float", "8.4", "9.555", "80.262"),
              ("truediv_int", "744", "543", "248/181"), ("truediv_frac", "3/8", "2/5", "15/16"),
              ("floordiv_int", "845", "152", "5"), ("mod_int", "845", "152", "85"),
              ("digit_max_float", "35.905", "8.4", "38.905"),
              ("digit_add_int", "12345", "34567", "46802"),
              ("digit_add_float", "44.418", "65.669", "9.077"),
              ("get_digit_float", "44.418", "3", "1"), ("length_float", "262.534", None, "6"),
              ("count_int", "27422", "2", "3"), ("to_float_sci", "8.538e2", None, "853.8"),
              ("to_scient_int", "50400", None, "5.04e4"), ("sig_float", "65.669", "2", "6.6e1")]
  for name, a, b, answer in examples:
    assert tasks.get(name).solve(a, b) == answer, name
  prompt = tasks.get("truediv_frac").prompt("12/7", "2/3")
  assert prompt.endswith("Divide two numbers and return the result as a fraction. (12/7) / (2/3) =")
  assert tasks.get("min_int").prompt("1", "2").endswith("Get the minimal number: 1 and 2 =")


# --- Sampling rules -------------------------------------------------------------------------


def _parts(text: str) -> list[str]:
  return re.split(r"[./e]", text)


def _length(text: str) -> int:
  return max(map(len, _parts(text)))


def _samples(name: str, length: int, count: int, seed: int = 0):
  task, rng = tasks.get(name), np.random.default_rng(seed)
  return [task.sample(rng, length) for _ in range(count)]


@pytest.mark.parametrize("name", ["add_int", "sub_float", "multiply_hard_frac", "max_sci",
                                  "digit_add_int", "truediv_int"])
def test_shorter_operand_is_uniform_in_half_to_full_length(name):
  length, count = 12, 7000
  shorter = collections.Counter()
  longer_first = 0
  for a, b in _samples(name, length, count):
    la, lb = _length(a), _length(b)
    assert max(la, lb) == length
    shorter[min(la, lb)] += 1
    longer_first += la > lb
  assert set(shorter) == set(range(6, 13))
  for short_length in range(6, 13):  # 1/7 each, within 5 standard errors
    assert abs(shorter[short_length] / count - 1 / 7) < 5 * math.sqrt(1 / 7 * 6 / 7 / count)
  unequal = count - shorter[length]
  if name not in ("sub_float",):
    assert abs(longer_first / unequal - 0.5) < 5 * math.sqrt(0.25 / unequal)


@pytest.mark.parametrize("name", ["sub_int", "sub_float", "sub_frac", "sub_sci", "floordiv_int",
                                  "mod_int", "mod_easy_int"])
def test_larger_number_comes_first(name):
  for a, b in _samples(name, 9, 500):
    assert oracle.value(a) >= oracle.value(b)


def test_sci_add_and_sub_exponent_gaps():
  gaps = collections.Counter()
  for a, b in _samples("add_sci", 8, 3000):
    ea, eb = int(a.split("e")[1]), int(b.split("e")[1])
    assert abs(ea - eb) <= 5 and max(ea, eb) <= 98
    gaps[eb - ea] += 1
  assert set(gaps) == set(range(-5, 6))
  for a, b in _samples("sub_sci", 8, 1000):
    ea, eb = int(a.split("e")[1]), int(b.split("e")[1])
    assert 1 <= ea - eb <= 5 or (eb == 0 and ea <= 5)
    assert oracle.value(a) - oracle.value(b) > 1


def test_sci_sub_sampler_applies_the_rule_to_a_close_pair(monkeypatch):
  """The pair the generalist's stream drew, forced through the sampler: exponents 1 and 0
  (the gap of 1 a one-digit first exponent allows), 10.599... - 9.756... <= 1, so +1."""
  monkeypatch.setattr(arithmetic.rn, "pair",
                      lambda rng, length, repr_name: ("9.75616699447273e0", "1.05994132083219e1"))
  a, b = tasks.get("sub_sci").sample(np.random.default_rng(0), 14)
  assert (a, b) == ("1.15994132083219e1", "9.75616699447273e0")
  assert tasks.get("sub_sci").solve(a, b) == "1.84324621384917e0"


@pytest.mark.parametrize("a, b, first", [
    ("1.05e1", "9.8e0", "1.15e1"),  # 10.5 - 9.8 = 0.7: the first number gets +1
    ("1.05994132083219e1", "9.75616699447273e0", "1.15994132083219e1"),  # a training draw
    ("1.08e1", "9.8e0", "1.18e1"),  # a difference of exactly 1 gets +1 too
    ("1.09e1", "9.8e0", "1.09e1"),  # 1.1: kept
    ("2.000001e2", "1.99999e2", "2.010001e2"),  # 0.0011 apart (equal exponents)
])
def test_sci_sub_difference_stays_above_one(a, b, first):
  assert arithmetic.difference_above_one(a, b) == (first, b)
  answer = tasks.get("sub_sci").solve(first, b)
  assert oracle.value(answer) == oracle.value(first) - oracle.value(b) >= 1


def test_easy_variants_cut_the_second_number():
  for a, b in _samples("multiply_easy_int", 15, 300):
    assert len(a) == 15 and len(b) <= 3
  for a, b in _samples("multiply_easy_float", 15, 300):
    assert _length(a) == 15 and all(len(p) <= 3 for p in _parts(b))
  for a, b in _samples("multiply_easy_sci", 15, 300):
    assert _length(a) == 15 and len(_parts(b)[1]) <= 3
  for a, b in _samples("multiply_easy_frac", 15, 300):
    assert _length(a) == 15 and _length(b) <= 3
  for a, b in _samples("add_easy_frac", 15, 300):
    assert sorted([_length(a), _length(b)])[0] <= 3 and max(_length(a), _length(b)) == 15
  for a, b in _samples("mod_int", 20, 300):
    assert len(a) == 20 and len(b) <= 7 * 20 // 10 + 1 and b != "0"
  for a, b in _samples("mod_easy_int", 20, 300):
    assert len(b) <= 3 and b != "0"


def test_fractions_compared_are_at_most_one():
  for name in ("max_frac", "min_frac"):
    for a, b in _samples(name, 6, 500):
      assert oracle.value(a) <= 1 and oracle.value(b) <= 1


def _common_prefix(a: str, b: str) -> int:
  return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def test_hard_comparisons_share_prefixes():
  length, count = 30, 3000
  prefixes = [_common_prefix(a, b) for a, b in _samples("max_hard_int", length, count)]
  assert all(p <= length for p in prefixes)
  # The copied prefix is uniform in 0..L-1, so the shared prefix is at least that long.
  assert abs(np.mean([p >= length // 2 for p in prefixes]) - 0.5) < 0.05
  same_int = [a.split(".")[0] == b.split(".")[0] for a, b in _samples("max_hard_float", 30, count)]
  assert abs(np.mean(same_int) - 0.7) < 0.04  # p = 0.7, plus rare chance agreements
  same_exp = [a.split("e")[1] == b.split("e")[1] for a, b in _samples("min_hard_sci", 30, count)]
  assert abs(np.mean(same_exp) - (0.8 + 0.2 / 100)) < 0.03


def test_conversion_rules():
  for a, _ in _samples("to_float_frac", 12, 300):
    den = int(a.split("/")[1])
    while den % 2 == 0:
      den //= 2
    while den % 5 == 0:
      den //= 5
    assert den == 1
  for a, _ in _samples("to_float_sci", 40, 300):
    assert int(a.split("e")[1]) <= 40
  zeros = [len(a) - len(a.rstrip("0")) for a, _ in _samples("to_scient_int", 40, 2000)]
  assert max(zeros) <= 20 + 2 and np.mean(zeros) > 9  # z uniform in 0..20, plus chance zeros
  for name in ("sig_int", "sig_float"):
    for a, b in _samples(name, 30, 300):
      assert 2 <= int(b) <= len(a.replace(".", ""))
  digits = collections.Counter(b for _, b in _samples("count_int", 10, 2000))
  assert set(digits) == set("0123456789")
  positions = collections.Counter(int(b) for _, b in _samples("get_digit_int", 10, 2000))
  assert set(positions) == set(range(10))


def test_length_one_and_sci_exponents():
  for name in ("add_sci", "sub_sci", "max_hard_sci", "to_float_sci", "multiply_easy_sci"):
    for a, b in _samples(name, 1, 200):
      assert all(len(p) == 1 for p in _parts(a) + _parts(b or "0")), (name, a, b)
  for name in ("to_scient_int", "sig_int"):
    assert all(a != "0" for a, _ in _samples(name, 1, 200))
