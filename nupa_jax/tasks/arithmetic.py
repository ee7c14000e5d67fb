"""Elementary arithmetic tasks: add, sub, multiply (hard / easy), truediv, floordiv, mod.

Sampling follows paper A.1.6 and docs/official_data.md; all are 20-digit-tier tasks.
- add (sci): the second exponent moves to within +-5 of the first (exponents stay below the
  largest one), drawn from the sample's rng (the official offset is seeded by b's digits).
- add_easy (frac): the shorter fraction (the first one on a tie) is cut to at most 3 digits in
  numerator and denominator (each taken mod 1000, a zero denominator becomes 1, reduced).
- sub: larger value first; sci: the first exponent is at least 1 and the second 1-5 below it,
  and a first number within 1 of the second gets +1 (a difference below 1 would need a negative
  exponent, which NUPA's scientific notation does not have).
- multiply_easy: longer number first, the second cut to 3 digits (int: mod 1000; float:
  integer part mod 1000 and 3 decimals; frac: as add_easy; sci: 3 mantissa decimals).
- truediv: a zero divisor becomes 1. floordiv, mod, mod_easy: larger first, zero divisor 1;
  mod cuts the divisor to floor(0.7 * digits(a)) + 1 digits, mod_easy to 3 (by modulo).
"""
from typing import Callable

import numpy as np

from nupa_jax import numbers
from nupa_jax.tasks import random_numbers as rn
from nupa_jax.tasks import registry
from nupa_jax.tasks import values

_SCI_EXPONENT_GAP = 5
_EASY_DIGITS = 3
_SCI_ONE = "1.0e0"


def _split_sci(text: str) -> tuple[str, int]:
  mantissa, _, exponent = text.partition("e")
  return mantissa, int(exponent)


def _larger_first(a: str, b: str, repr_name: str) -> tuple[str, str]:
  return (a, b) if values.compare(a, b, repr_name) >= 0 else (b, a)


def _nonzero(b: str, repr_name: str) -> str:
  """The official generator's zero divisor rule: 0 becomes 1."""
  if repr_name == "frac":
    return "1/1" if b.startswith("0/") else b
  return "1" if b == "0" else b


def cut(text: str, repr_name: str, max_digits: int = _EASY_DIGITS) -> str:
  """The official 'easy' cut of a number longer than max_digits (see module docstring)."""
  keep = 10**max_digits
  if repr_name == "int":
    return str(int(text) % keep) if len(text) > max_digits else text
  if repr_name == "frac":
    num, den = map(int, text.split("/"))
    if max(len(str(num)), len(str(den))) <= max_digits:
      return text
    return "%d/%d" % values.reduce(num % keep, den % keep or 1)
  mantissa, sep, exponent = text.partition("e")
  whole, dec = mantissa.split(".")
  if len(dec) <= max_digits:
    return text
  return f"{int(whole) % keep}.{dec[:max_digits].rstrip('0') or '0'}{sep}{exponent}"


def _sample_add(repr_name: str):
  def sample(rng: np.random.Generator, length: int) -> tuple[str, str]:
    a, b = rn.pair(rng, length, repr_name)
    if repr_name != "sci":
      return a, b
    top = rn.exponent_max(length) - 1
    (ma, ea), (mb, _) = _split_sci(a), _split_sci(b)
    ea = min(ea, top)
    eb = min(max(ea + rn.randint(rng, -_SCI_EXPONENT_GAP, _SCI_EXPONENT_GAP), 0), top)
    return f"{ma}e{ea}", f"{mb}e{eb}"
  return sample


def _sample_add_easy(rng: np.random.Generator, length: int) -> tuple[str, str]:
  a, b = rn.pair(rng, length, "frac")
  if max(map(len, a.split("/"))) > max(map(len, b.split("/"))):
    return a, cut(b, "frac")
  return cut(a, "frac"), b


def _sample_sub(repr_name: str):
  def sample(rng: np.random.Generator, length: int) -> tuple[str, str]:
    a, b = _larger_first(*rn.pair(rng, length, repr_name), repr_name)
    if repr_name != "sci":
      return a, b
    (ma, ea), (mb, _) = _split_sci(a), _split_sci(b)
    ea = max(ea, 1)
    eb = max(ea - rn.randint(rng, 1, _SCI_EXPONENT_GAP), 0)
    return difference_above_one(f"{ma}e{ea}", f"{mb}e{eb}")
  return sample


def difference_above_one(a: str, b: str) -> tuple[str, str]:
  """(a + 1, b) when a - b <= 1, else (a, b): the official rule for a sci sub question. The
  sampler calls it with a's exponent above b's, so a >= 10**e(a) > b and a + 1 keeps a's
  exponent (with equal exponents it could change it: 9.99e1 -> 1.009e2)."""
  if values.compare(a, values.add(b, _SCI_ONE, "sci"), "sci") <= 0:
    return values.add(a, _SCI_ONE, "sci"), b
  return a, b


def _sample_multiply_easy(repr_name: str):
  def sample(rng: np.random.Generator, length: int) -> tuple[str, str]:
    a = rn.number(rng, length, repr_name)
    b = rn.number(rng, rn.shorter_length(rng, length), repr_name)
    return a, cut(b, repr_name)
  return sample


def _sample_truediv(repr_name: str):
  def sample(rng: np.random.Generator, length: int) -> tuple[str, str]:
    a, b = rn.pair(rng, length, repr_name)
    return a, _nonzero(b, repr_name)
  return sample


def _sample_division(max_divisor_digits: Callable[[int], int] | None):
  """floordiv / mod: larger first, divisor cut to max_divisor_digits(len(a)) digits, not 0."""
  def sample(rng: np.random.Generator, length: int) -> tuple[str, str]:
    a, b = _larger_first(*rn.pair(rng, length, "int"), "int")
    if max_divisor_digits is not None:
      b = cut(b, "int", max_divisor_digits(len(a)))
    return a, _nonzero(b, "int")
  return sample


def _binary(op, repr_name: str):
  return lambda a, b: op(a, b, repr_name)


def _integer_division(want_quotient: bool):
  def solve(a: str, b: str | None) -> str:
    x, y = numbers.to_scaled(a, "int")[0], numbers.to_scaled(b, "int")[0]
    if y == 0:
      raise ValueError(f"division by zero: {a} / {b}")
    return str(x // y if want_quotient else x % y)
  return solve


def _register() -> None:
  for repr_name in numbers.REPRS:
    registry.register("add", repr_name, sampler=_sample_add(repr_name),
                      solver=_binary(values.add, repr_name), max_digits=20)
    registry.register("sub", repr_name, sampler=_sample_sub(repr_name),
                      solver=_binary(values.sub, repr_name), max_digits=20)
    registry.register("multiply_hard", repr_name,
                      sampler=lambda rng, length, r=repr_name: rn.pair(rng, length, r),
                      solver=_binary(values.multiply, repr_name), max_digits=20)
    registry.register("multiply_easy", repr_name, sampler=_sample_multiply_easy(repr_name),
                      solver=_binary(values.multiply, repr_name), max_digits=20)
  for repr_name in ("int", "frac"):
    registry.register("truediv", repr_name, sampler=_sample_truediv(repr_name),
                      solver=_binary(values.divide, repr_name), max_digits=20,
                      answer_repr="frac")
  registry.register("floordiv", "int", sampler=_sample_division(None),
                    solver=_integer_division(True), max_digits=20)
  registry.register("mod", "int", sampler=_sample_division(lambda digits: 7 * digits // 10 + 1),
                    solver=_integer_division(False), max_digits=20)
  registry.register("mod_easy", "int", sampler=_sample_division(lambda digits: _EASY_DIGITS),
                    solver=_integer_division(False), max_digits=20)
  registry.register("add_easy", "frac", sampler=_sample_add_easy,
                    solver=_binary(values.add, "frac"), max_digits=20)


_register()
