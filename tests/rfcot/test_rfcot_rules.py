"""RF-CoT rules and traces: every trace ends in the solver's answer; traces are deterministic,
follow the paper's format, and show the rule's own source."""
import hashlib
import inspect
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from nupa_jax import rfcot
from nupa_jax import tasks
from nupa_jax.rfcot import interpreter

TASKS = rfcot.names()
# Fractions trace every helper (products, Euclid, two long divisions): shorter lengths by
# default keep the suite fast; the slow test covers every length.
_QUICK_MAX = {"frac": 5}


def _lengths(task: str, quick: bool) -> list[int]:
  t = tasks.get(task)
  if not quick:
    return list(range(1, t.max_digits + 1))
  top = min(t.max_digits, _QUICK_MAX.get(t.repr, 12))
  return list(range(1, top + 1)) + ([20, 60, 100] if t.max_digits == 100 else [20])


def _check_answers(task: str, lengths: list[int], per_length: int, seed: int) -> int:
  t = tasks.get(task)
  rule = interpreter.get(rfcot.rule_name(task))
  rng = np.random.default_rng([seed, len(task)])
  count = 0
  for length in lengths:
    for _ in range(per_length):
      a, b = t.sample(rng, length)
      want = t.solve(a, b)
      answer, response = rfcot.solve(task, a, b)
      assert answer == want, (task, a, b)
      assert response.endswith(f"\nSo the answer is {want}"), (task, a, b)
      assert rfcot.extract_answer(response) == want
      # The rule is also plain Python: run directly, it agrees with its trace.
      assert rule.function(*((a,) if t.unary else (a, b))) == want
      count += 1
  return count


@pytest.mark.parametrize("task", TASKS)
def test_trace_answers_equal_the_solver(task):
  lengths = _lengths(task, quick=True)
  per_length = max(1, 300 // len(lengths))
  assert _check_answers(task, lengths, per_length, seed=0) >= 200


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_trace_answers_equal_the_solver_thousands(task):
  lengths = _lengths(task, quick=False)
  per_length = max(20, 3000 // len(lengths))
  assert _check_answers(task, lengths, per_length, seed=1) >= 2000


_FIXED = [("add_int", "28", "35"), ("multiply_hard_frac", "7/5", "3/4"),
          ("add_sci", "1.25e3", "9.5e1"), ("get_digit_float", "12.345", "3"),
          ("max_frac", "3/7", "2/5"), ("length_int", "1234567", None)]


def _digest() -> str:
  text = "\n".join(rfcot.prompt(*q) + rfcot.response(*q) for q in _FIXED)
  return hashlib.sha256(text.encode()).hexdigest()


def test_traces_are_deterministic_across_processes():
  assert [rfcot.response(*q) for q in _FIXED] == [rfcot.response(*q) for q in _FIXED]
  script = "from test_rfcot_rules import _digest; print(_digest())"
  other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=__file__.rsplit("/", 1)[0],
                         env={"PYTHONHASHSEED": "12345"}).stdout.strip()
  assert other == _digest()


def test_paper_example():
  """The paper's appendix example (28 + 35), step by step, computed by hand."""
  prompt = rfcot.prompt("add_int", "28", "35")
  assert prompt.startswith("Follow the given rule to solve the question.\nRule:\n```python\n"
                           "def add_int(num1, num2):\n")
  assert prompt.endswith("Add two numbers: 28 + 35\nResponse:\n")
  assert "Return the answer as an integer" in prompt and "Directly" not in prompt
  lines = rfcot.response("add_int", "28", "35").split("\n")
  assert lines[:2] == ["num1 = '28'", "num2 = '35'"]
  for step in ["check the stop criterion: '28' or '35' is True", "enter the loop",
               "chunk1 = 28", "chunk2 = 35", "total = 28 + 35 + 0 = 63",
               "result = '063' + '' = '063'", "carry = 63 // 1000 = 0", "num1 = ''",
               "check the stop criterion: '' or '' is False", "end the loop",
               "check the condition: 0 is False", "skip the branch",
               "result = '63' or '0' = '63'", "return '63'"]:
    assert step in lines, step
  assert lines[-1] == "So the answer is 63"
  assert lines.count("```") % 2 == 0  # every code snippet is fenced


def test_carries_and_chunks_are_explicit():
  response = rfcot.response("add_int", "1999999", "1")
  assert response.count("enter the loop") == 3  # 1 | 999 | 999 in three-digit chunks
  assert "total = 999 + 1 + 0 = 1000" in response
  assert "carry = 1000 // 1000 = 1" in response
  assert "total = 1 + 0 + 1 = 2" in response
  assert response.endswith("So the answer is 2000000")
  response = rfcot.response("sub_int", "1000", "1")
  assert "total = 0 - 1 - 0 = -1" in response and "total = -1 + 1000 = 999" in response
  response = rfcot.response("multiply_hard_int", "123456", "789")
  assert "a = [456, 123]" in response and "total = 0 + 456 * 789 = 359784" in response
  response = rfcot.response("floordiv_int", "1234", "56")
  assert "digit = 123 // 56 = 2" in response and "rem = 123 - 2 * 56 = 11" in response


def test_calls_are_traced_inside_the_caller():
  response = rfcot.response("add_float", "12.5", "3.75")
  enter, leave = response.index("enter function: add_int"), response.index("exit function: add_int")
  assert enter < leave
  assert "num1 = '1250'" in response[enter:leave]  # the callee's own arguments
  assert "full1 = '12' + '5' + '0' * (2 - 1) = '1250'" in response
  assert response.endswith("So the answer is 16.25")


@pytest.mark.parametrize("task", ["add_int", "add_float", "multiply_hard_frac", "max_sci"])
def test_prompt_shows_each_rules_source(task):
  """The rule text is the functions' source from `def` on: the rule, then its helpers."""
  text = rfcot.rule_text(task)
  for rule in interpreter.with_helpers(rfcot.rule_name(task)):
    source = textwrap.dedent(inspect.getsource(rule.function))
    source = source[source.index("def "):].rstrip("\n")
    assert source in text
  assert text.startswith(f"def {rfcot.rule_name(task)}(")
  calls = set(re.findall(r"= (\w+)\(", text)) - set(interpreter.BUILTINS)
  assert calls <= {r.name for r in interpreter.with_helpers(rfcot.rule_name(task))}


def test_extract_answer():
  assert rfcot.extract_answer("... return '63'\nSo the answer is 63") == "63"
  assert rfcot.extract_answer("So the answer is 63.") == "63"  # the paper's example
  assert rfcot.extract_answer("So the answer is 1.25e3\nSo the answer is 7/13 ") == "7/13"
  assert rfcot.extract_answer("So the answer is 0.5") == "0.5"
  assert rfcot.extract_answer("no answer here") == ""
  assert rfcot.extract_answer("So the answer is ") == ""


@pytest.fixture
def scratch_registry(monkeypatch):
  """Rules registered by a test stay out of the real registry."""
  monkeypatch.setattr(interpreter, "_RULES", dict(interpreter._RULES))  # pylint: disable=protected-access


def test_unsupported_rules_name_the_fix(scratch_registry):
  def loop_over(num):
    out = 0
    for d in num:
      out = out + int(d)
    return out

  with pytest.raises(ValueError, match="For statements are not supported"):
    interpreter.rule(loop_over)

  def nested(num):
    return str(int(add_int(num, num)))  # noqa: F821

  with pytest.raises(ValueError, match="only as the whole value"):
    interpreter.rule(nested)


def test_a_rule_that_never_stops_fails_loudly(monkeypatch, scratch_registry):
  def spin(num):
    while num:
      num = num
    return num

  monkeypatch.setattr(interpreter, "MAX_LOOP_STEPS", 50)
  interpreter.rule(spin)
  with pytest.raises(RuntimeError, match="does not terminate"):
    interpreter.trace("spin", ["1"])


def test_tasks_without_a_rule_are_refused():
  with pytest.raises(ValueError, match="has no RF-CoT rule"):
    rfcot.prompt("to_float_frac", "1/2")
  assert set(rfcot.TABLE_TASKS) <= set(TASKS)
