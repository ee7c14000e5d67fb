"""Digit-understanding tasks: digit_max, digit_min, digit_add, get_digit, length, count.

All are 100-digit-tier tasks on integers (and floats, except count).
- digit_*: integer parts align right, decimal parts left, missing digits are 0; the digit-wise
  result is read back as a number (leading zeros and trailing decimal zeros drop, so
  1234 digit-add 9876 = 0). A plain pair of numbers.
- get_digit: position uniform over all digits (the decimal point is not counted), from the left.
- length: number of digits (integer + decimal part).
- count: the digit to count is uniform in 0-9 and may not occur (answer 0).
Each unary task draws its number at the question's length.
"""
import numpy as np

from nupa_jax import numbers
from nupa_jax.tasks import random_numbers as rn
from nupa_jax.tasks import registry
from nupa_jax.tasks import values

_DIGIT_OPS = {"max": max, "min": min, "add": lambda x, y: (x + y) % 10}
# Byte 10*x + y (two digits) -> the character of op(x, y); the rest of the 256 is unused.
_TABLES = {name: bytes(ord("0") + op(v // 10, v % 10) for v in range(100)).ljust(256, b"?")
           for name, op in _DIGIT_OPS.items()}


def _combine(x: str, y: str, table: bytes) -> str:
  """op(x[i], y[i]) for two equal-length digit strings, without a Python loop over digits.

  Read as base-256 integers, digit characters minus '0' are bytes 0-9, so 10*x + y packs each
  pair of digits into one byte 0-99 with no carry; a translation table applies op to each.
  """
  n = len(x)
  zeros = int.from_bytes(b"0" * n, "big")
  pairs = (int.from_bytes(x.encode(), "big") - zeros) * 10 + int.from_bytes(y.encode(), "big")
  return (pairs - zeros).to_bytes(n, "big").translate(table).decode()


def _digitwise(repr_name: str, op: str):
  table = _TABLES[op]

  def solve(a: str, b: str) -> str:
    pa, pb = numbers.split_parts(a, repr_name), numbers.split_parts(b, repr_name)
    if pa is None or pb is None:
      raise ValueError(f"expected two {repr_name} numbers, got {a!r} and {b!r}")
    width = max(len(pa[0]), len(pb[0]))
    whole = _combine(pa[0].zfill(width), pb[0].zfill(width), table).lstrip("0") or "0"
    if repr_name == "int":
      return whole
    width = max(len(pa[1]), len(pb[1]))
    dec = _combine(pa[1].ljust(width, "0"), pb[1].ljust(width, "0"), table).rstrip("0") or "0"
    return f"{whole}.{dec}"
  return solve


def _all_digits(text: str, repr_name: str) -> str:
  parts = numbers.split_parts(text, repr_name)
  if parts is None:
    raise ValueError(f"{text!r} is not a {repr_name} number")
  return "".join(parts)


def _sample_get_digit(repr_name: str):
  def sample(rng: np.random.Generator, length: int) -> tuple[str, str]:
    a = rn.number(rng, length, repr_name)
    return a, str(rn.randbelow(rng, len(a) - (repr_name == "float")))
  return sample


def _solve_get_digit(repr_name: str):
  def solve(a: str, b: str | None) -> str:
    digits, position = _all_digits(a, repr_name), values.short(b)
    if position >= len(digits):
      raise ValueError(f"position {position} is past the last digit of {a}")
    return digits[position]
  return solve


def _sample_count(rng: np.random.Generator, length: int) -> tuple[str, str]:
  return rn.integer(rng, length), str(rn.randbelow(rng, 10))


def _solve_count(a: str, b: str | None) -> str:
  digit = values.short(b)
  if digit > 9:
    raise ValueError(f"count needs a single digit, got {b!r}")
  return str(_all_digits(a, "int").count(str(digit)))


def _register() -> None:
  for repr_name in ("int", "float"):
    for op in ("max", "min", "add"):
      registry.register(f"digit_{op}", repr_name,
                        sampler=lambda rng, length, r=repr_name: rn.pair(rng, length, r),
                        solver=_digitwise(repr_name, op), max_digits=100)
    registry.register("get_digit", repr_name, sampler=_sample_get_digit(repr_name),
                      solver=_solve_get_digit(repr_name), max_digits=100, answer_repr="int",
                      second="short")
    registry.register("length", repr_name,
                      sampler=lambda rng, length, r=repr_name: (rn.number(rng, length, r), None),
                      solver=lambda a, b, r=repr_name: str(len(_all_digits(a, r))),
                      max_digits=100, answer_repr="int", second=None)
  registry.register("count", "int", sampler=_sample_count, solver=_solve_count, max_digits=100,
                    answer_repr="int", second="short")


_register()
