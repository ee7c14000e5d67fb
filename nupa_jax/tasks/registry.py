"""The NUPA task registry: names, aliases, tiers, test lengths and the paper's text prompts.

A task is one (kind, representation) pair of the paper's Table 1 or one of its easy/hard
variants. Task families (arithmetic, comparison, digits, conversion) register their tasks here
with a sampler and a solver; everything that is the same for all tasks (names, official aliases,
test lengths, prompts, the question length) lives in this module.
"""
import dataclasses
import difflib
from typing import Callable

import numpy as np

from nupa_jax import numbers

# Fixed order: vocabularies give one token per kind in this order.
KINDS = ("add", "sub", "multiply_hard", "multiply_easy", "truediv", "floordiv", "mod", "mod_easy",
         "max", "max_hard", "min", "min_hard", "digit_max", "digit_min", "digit_add", "get_digit",
         "length", "count", "to_float", "to_scient", "sig", "add_easy")

# Names the official code (GraphPKU/number_cookbook) gives the representations.
OFFICIAL_TYPES = {"int": "Integer", "float": "Float", "frac": "Fraction", "sci": "ScientificNotation"}

# Kinds whose answer is a short integer (a digit, a count, a length): "int" in official names.
_SHORT_ANSWER_KINDS = ("get_digit", "length", "count")

# Paper A.2: the format prompt, by the answer's representation.
FORMAT_PROMPTS = {
    "int": "Directly return the answer as an integer without any comma separator, like 123 . ",
    "float": "Directly return the answer as a float without any comma separator, like 10.4 . ",
    "frac": "Directly return the answer as an **irreducible** fraction without any comma "
            "separator, like 7/13 . ",
    "sci": "Directly return the answer as a scientific notation without any comma separator, "
           "like 1.23e4 . The float part should be in the range [1, 10). ",
}

_ADD = ("Add two numbers: ", " + ")
_MULTIPLY = ("Multiply two numbers: ", " * ")
_MAX = ("Get the maximal number: ", " and ")
_MIN = ("Get the minimal number: ", " and ")  # paper A.2 (the official code misspells it)
_MOD = ("Divide two numbers and return the remainder. ", " % ")
_DIGIT_COMPARE = ("Compare two numbers digit by digit and return the {} digit at each position, "
                  "treating any missing digits as 0. ")

# Paper A.2: task prompt and operator by kind (operator None: a single operand).
PROMPTS = {
    "add": _ADD,
    "add_easy": _ADD,
    "sub": ("Subtract two numbers: ", " - "),
    "multiply_hard": _MULTIPLY,
    "multiply_easy": _MULTIPLY,
    "truediv": ("Divide two numbers and return the result as a fraction. ", " / "),
    "floordiv": ("Divide two numbers and return the result as an integer. ", " // "),
    "mod": _MOD,
    "mod_easy": _MOD,
    "max": _MAX,
    "max_hard": _MAX,
    "min": _MIN,
    "min_hard": _MIN,
    "digit_max": (_DIGIT_COMPARE.format("larger"), " and "),
    "digit_min": (_DIGIT_COMPARE.format("smaller"), " and "),
    "digit_add": ("The task is to add two given numbers digit by digit and return the result "
                  "modulo 10 (ignoring carry), treating any missing digits as 0. ", " digit add "),
    "get_digit": ("Get the digit at the given position (from left to right, starting from 0). ",
                  " at position "),
    "length": ("The total number of digits of ", None),
    "count": ("Count the number of the given digit in the given number: ",
              " count the occurrence time of digit "),
    "to_float": ("Convert the number to float: ", None),
    "to_scient": ("Convert the number to scientific notation: ", None),
    "sig": ("Convert the number to scientific notation: ", " and keep significant figures as "),
}

Sampler = Callable[[np.random.Generator, int], tuple[str, str | None]]
Solver = Callable[[str, str | None], str]


def test_digits(max_digits: int, repr_name: str) -> tuple[int, ...]:
  """Lengths of the frozen test set, as in the official data's digit keys.

  Fractions: 1-20. 20-digit tier: 3-20. 100-digit tier: 5-100 for integers, 3-100 for floats
  and scientific numbers. The shortest lengths stay out so that they can be trained on.
  """
  if repr_name == "frac":
    first = 1
  elif repr_name == "int" and max_digits == 100:
    first = 5
  else:
    first = 3
  return tuple(range(first, max_digits + 1))


def _part_length(text: str, repr_name: str) -> int:
  parts = numbers.split_parts(text, repr_name)
  if parts is None:
    raise ValueError(f"{text!r} is not a {repr_name} number")
  return max(map(len, parts))


@dataclasses.dataclass(frozen=True, eq=False)
class Task:
  """One NUPA task. Operands and answers are strings in the paper's notation.

  `sample(rng, L)` draws a question of length L (the digits of the longest part of the longer
  operand) with the caller's numpy Generator; lengths below 1 raise ValueError, every L >= 1 is
  produced exactly. `solve` gives the canonical answer, `prompt` the paper's text up to `=`.
  """
  name: str
  kind: str
  repr: str
  arg_reprs: tuple[str, ...]
  answer_repr: str
  max_digits: int
  test_digits: tuple[int, ...]
  official_name: str
  sampler: Sampler = dataclasses.field(repr=False)
  solver: Solver = dataclasses.field(repr=False)

  @property
  def unary(self) -> bool:
    return len(self.arg_reprs) == 1

  def sample(self, rng: np.random.Generator, length: int) -> tuple[str, str | None]:
    if length < 1:
      raise ValueError(f"{self.name}: a question needs length >= 1, got {length}")
    return self.sampler(rng, length)

  def solve(self, a: str, b: str | None = None) -> str:
    """The canonical answer; ValueError for malformed operands or an undefined result."""
    if (b is None) != self.unary:
      raise ValueError(f"{self.name} takes {len(self.arg_reprs)} operand(s)")
    return self.solver(a, b)

  def length(self, a: str, b: str | None = None) -> int:
    """Digits of the longest part of the longer number operand (short arguments excluded)."""
    result = _part_length(a, self.repr)
    if b is not None and self.arg_reprs[1] != "short":
      result = max(result, _part_length(b, self.arg_reprs[1]))
    return result

  def prompt(self, a: str, b: str | None = None) -> str:
    instruction, operator = PROMPTS[self.kind]
    head = FORMAT_PROMPTS[self.answer_repr] + instruction
    if operator is None:
      return f"{head}{a} ="
    if self.kind == "truediv" and self.repr == "frac":  # paper A.1.1: (12/7) / (2/3)
      return f"{head}({a}){operator}({b}) ="
    return f"{head}{a}{operator}{b} ="

  def parse_prompt(self, text: str) -> tuple[str, str | None, str | None]:
    """(a, b, answer) from `prompt(a, b)` optionally followed by ` answer`; inverse of prompt."""
    instruction, operator = PROMPTS[self.kind]
    head = FORMAT_PROMPTS[self.answer_repr] + instruction
    if not text.startswith(head):
      raise ValueError(f"not a {self.name} question: {text[:120]!r}")
    body, sep, answer = text[len(head):].rpartition(" =")
    if not sep or (answer and not answer.startswith(" ")):
      raise ValueError(f"no ' =' in {self.name} question {text[:120]!r}")
    answer = answer[1:] if answer else None
    if operator is None:
      return body, None, answer
    a, sep, b = body.partition(operator)
    if not sep:
      raise ValueError(f"no {operator.strip()!r} in {self.name} question {text[:120]!r}")
    if self.kind == "truediv" and self.repr == "frac":
      a, b = a[1:-1], b[1:-1]
    return a, b, answer


_TASKS: dict[str, Task] = {}
_ALIASES: dict[str, str] = {}


def register(kind: str, repr_name: str, *, sampler: Sampler, solver: Solver, max_digits: int,
             answer_repr: str | None = None, second: str | None = "same") -> Task:
  """Adds task `{kind}_{repr_name}`; `second` is "same", "short" or None (unary)."""
  if kind not in KINDS:
    raise ValueError(f"unknown task kind {kind!r}; known: {', '.join(KINDS)}")
  numbers.check_repr(repr_name)
  answer_repr = answer_repr or repr_name
  arg_reprs = (repr_name,) if second is None else (
      repr_name, repr_name if second == "same" else second)
  official_b = "none" if second is None else ("int" if second == "short" else
                                              OFFICIAL_TYPES[repr_name])
  official_out = "int" if kind in _SHORT_ANSWER_KINDS else OFFICIAL_TYPES[answer_repr]
  task = Task(
      name=f"{kind}_{repr_name}", kind=kind, repr=repr_name, arg_reprs=arg_reprs,
      answer_repr=answer_repr, max_digits=max_digits,
      test_digits=test_digits(max_digits, repr_name),
      official_name=f"{kind}_{OFFICIAL_TYPES[repr_name]}_{official_b}_{official_out}",
      sampler=sampler, solver=solver)
  if task.name in _TASKS:
    raise ValueError(f"task {task.name} registered twice")
  _TASKS[task.name] = task
  _ALIASES[task.official_name] = task.name
  if kind == "multiply_hard":
    _ALIASES[f"multiply_{repr_name}"] = task.name
  return task


def names() -> list[str]:
  """Canonical task names, by kind (KINDS order) then representation (REPRS order)."""
  order = {kind: i for i, kind in enumerate(KINDS)}
  return sorted(_TASKS, key=lambda n: (order[_TASKS[n].kind], numbers.REPRS.index(_TASKS[n].repr)))


def kinds() -> tuple[str, ...]:
  return KINDS


def get(name: str) -> Task:
  """A task by canonical name or alias (`multiply_int`, `add_Integer_Integer_Integer`)."""
  task = _TASKS.get(_ALIASES.get(name, name))
  if task is None:
    close = difflib.get_close_matches(name, list(_TASKS) + list(_ALIASES), n=5, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(names())}"
    raise ValueError(f"unknown task {name!r}; {hint}")
  return task
