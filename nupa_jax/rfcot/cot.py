"""RF-CoT samples: which rule solves which task, and the prompt and response of a question.

A sample is the paper's (appendix "Data Format of Rule-following CoT"):

    Follow the given rule to solve the question.
    Rule:
    ```python
    def add_int(num1, num2):
      ...                       <- the rule's source, then every rule it calls
    ```
    Q: Return the answer as an integer without any comma separator, like 123 . Add two numbers: 28 + 35
    Response:
    num1 = '28'                 <- the response: the trace of the rule (interpreter.py) ...
    ...
    So the answer is 63         <- ... and the answer, always `task.solve(a, b)`

The question is the task's own text prompt (`tasks.get(task).prompt`) with "Directly return"
read as "Return" (the model is not to answer directly) and without the final " =". Training
computes the loss on the response only.
"""
from __future__ import annotations

import functools

from nupa_jax import tasks as tasks_lib
from nupa_jax.rfcot import interpreter
from nupa_jax.rfcot import rules_decimal as _rules_decimal  # noqa: F401  (registers rules)
from nupa_jax.rfcot import rules_fraction as _rules_fraction  # noqa: F401
from nupa_jax.rfcot import rules_integer as _rules_integer  # noqa: F401

INSTRUCTION = "Follow the given rule to solve the question."
ANSWER_PREFIX = "So the answer is"

# Paper tab:rfft_max_length: the tasks trained with RF-CoT (its rows Integer, Float, Fraction,
# Scientific x columns Add, Sub, Multiply, Floordiv, Mod, Max, DigitMax, GetDigit, Length) and
# the longest digit length whose samples fit a 2k context with Llama-3.1's tokenizer.
PAPER_MAX_DIGITS = {
    "add_int": 20, "sub_int": 20, "multiply_hard_int": 12, "floordiv_int": 20, "mod_int": 6,
    "max_int": 100, "digit_max_int": 17, "get_digit_int": 100, "length_int": 34,
    "add_float": 6, "sub_float": 5, "multiply_hard_float": 4, "max_float": 50,
    "get_digit_float": 100,
    "add_frac": 3, "sub_frac": 2, "multiply_hard_frac": 3, "max_frac": 20,
    "add_sci": 3, "sub_sci": 3, "multiply_hard_sci": 3, "max_sci": 100,
}
TABLE_TASKS = tuple(PAPER_MAX_DIGITS)

# Task kind -> the operation its rule performs (variants differ only in how they sample).
_OPERATION = {
    "add": "add", "add_easy": "add", "sub": "sub", "multiply_hard": "multiply",
    "multiply_easy": "multiply", "floordiv": "floordiv", "mod": "mod", "mod_easy": "mod",
    "max": "max", "max_hard": "max", "digit_max": "digit_max", "get_digit": "get_digit",
    "length": "length",
}


@functools.cache
def _rules_by_task() -> dict[str, str]:
  """{task: rule} for every registered task whose operation has a rule on its representation:
  the table's tasks and their easy / hard variants (e.g. max_hard_int, multiply_easy_frac)."""
  known = set(interpreter.names())
  out = {}
  for name in tasks_lib.names():
    task = tasks_lib.get(name)
    rule = f"{_OPERATION.get(task.kind)}_{task.repr}"
    if rule in known:
      out[name] = rule
  return out


def names() -> list[str]:
  """Tasks with an RF-CoT rule, in the task registry's order."""
  return list(_rules_by_task())


def rule_name(task: str) -> str:
  """The rule that solves `task` (aliases accepted)."""
  canonical = tasks_lib.get(task).name
  rule = _rules_by_task().get(canonical)
  if rule is None:
    raise ValueError(f"task {canonical} has no RF-CoT rule; tasks with one: {', '.join(names())}")
  return rule


@functools.cache
def _rule_text(rule: str) -> str:
  return "\n\n".join(r.source for r in interpreter.with_helpers(rule))


def rule_text(task: str) -> str:
  """The code the prompt shows: the task's rule, then every rule it calls."""
  return _rule_text(rule_name(task))


def question(task: str, a: str, b: str | None = None) -> str:
  """The task's text prompt, asking for the answer without asking for it directly."""
  text = tasks_lib.get(task).prompt(a, b).removesuffix(" =")
  return text.replace("Directly return", "Return", 1)


def prompt(task: str, a: str, b: str | None = None) -> str:
  """Everything before the response; ends with a newline."""
  return (f"{INSTRUCTION}\nRule:\n```python\n{rule_text(task)}\n```\n"
          f"Q: {question(task, a, b)}\nResponse:\n")


def solve(task: str, a: str, b: str | None = None) -> tuple[str, str]:
  """(answer, response): the rule executed on the operands and its written-out trace."""
  args = (a,) if tasks_lib.get(task).unary else (a, b)
  answer, lines = interpreter.trace(rule_name(task), args)
  if not isinstance(answer, str):
    raise TypeError(f"rule {rule_name(task)} returned {answer!r}; rules return strings")
  return answer, "\n".join(lines + [f"{ANSWER_PREFIX} {answer}"])


def response(task: str, a: str, b: str | None = None) -> str:
  """The response a model is trained to write (trace, then "So the answer is X")."""
  return solve(task, a, b)[1]


def extract_answer(text: str) -> str:
  """The answer after the last "So the answer is" in `text`, '' if there is none: the first
  word after it, without a final period (the paper's example ends "So the answer is 63.")."""
  _, found, tail = text.rpartition(ANSWER_PREFIX)
  words = tail.split()
  if not found or not words:
    return ""
  return words[0].removesuffix(".")
