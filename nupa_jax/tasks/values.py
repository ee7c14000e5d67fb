"""Exact arithmetic on operand strings with Python ints, shared by the task families.

Decimal representations (int, float, sci) become scaled integers n * 10**e, fractions become
(num, den) pairs; no `fractions.Fraction` in the hot path. Results print through
`nupa_jax.numbers`, so they are canonical.
"""
import math
import re

from nupa_jax import numbers

_SHORT = re.compile(r"\d+")


def short(text: str | None) -> int:
  """A short integer argument (position, digit, significant figures)."""
  if text is None or not _SHORT.fullmatch(text):
    raise ValueError(f"expected a short integer argument, got {text!r}")
  return int(text)


def ratio(text: str, repr_name: str) -> tuple[int, int]:
  """(num, den) of any representation's value, den > 0 (not necessarily reduced)."""
  if repr_name == "frac":
    return numbers.to_ratio(text)
  n, e = numbers.to_scaled(text, repr_name)
  return (n * 10**e, 1) if e >= 0 else (n, 10**-e)


def aligned(a: str, b: str, repr_name: str) -> tuple[int, int, int]:
  """(x, y, e): a = x * 10**e and b = y * 10**e."""
  n, e = numbers.to_scaled(a, repr_name)
  m, f = numbers.to_scaled(b, repr_name)
  if e > f:
    return n * 10**(e - f), m, f
  return n, m * 10**(f - e), e


def compare(a: str, b: str, repr_name: str) -> int:
  """-1, 0 or 1 as the value of a is below, equal to or above that of b."""
  if repr_name == "frac":
    an, ad = numbers.to_ratio(a)
    bn, bd = numbers.to_ratio(b)
    x, y = an * bd, bn * ad
  else:
    x, y, _ = aligned(a, b, repr_name)
  return (x > y) - (x < y)


def canonical(text: str, repr_name: str) -> str:
  """The canonical spelling of a number's value (`007` -> `7`, `2/4` -> `1/2`)."""
  if repr_name == "frac":
    return numbers.format_ratio(*numbers.to_ratio(text), "frac")
  return numbers.format_scaled(*numbers.to_scaled(text, repr_name), repr_name)


def add(a: str, b: str, repr_name: str) -> str:
  if repr_name == "frac":
    an, ad = numbers.to_ratio(a)
    bn, bd = numbers.to_ratio(b)
    return numbers.format_ratio(an * bd + bn * ad, ad * bd, "frac")
  x, y, e = aligned(a, b, repr_name)
  return numbers.format_scaled(x + y, e, repr_name)


def sub(a: str, b: str, repr_name: str) -> str:
  if repr_name == "frac":
    an, ad = numbers.to_ratio(a)
    bn, bd = numbers.to_ratio(b)
    x, y, den, e = an * bd, bn * ad, ad * bd, 0
  else:
    x, y, e = aligned(a, b, repr_name)
    den = 1
  if x < y:
    raise ValueError(f"{a} - {b} is negative; NUPA numbers are non-negative")
  if repr_name == "frac":
    return numbers.format_ratio(x - y, den, "frac")
  return numbers.format_scaled(x - y, e, repr_name)


def multiply(a: str, b: str, repr_name: str) -> str:
  if repr_name == "frac":
    an, ad = numbers.to_ratio(a)
    bn, bd = numbers.to_ratio(b)
    return numbers.format_ratio(an * bn, ad * bd, "frac")
  n, e = numbers.to_scaled(a, repr_name)
  m, f = numbers.to_scaled(b, repr_name)
  return numbers.format_scaled(n * m, e + f, repr_name)


def divide(a: str, b: str, repr_name: str) -> str:
  """a / b as a reduced fraction."""
  an, ad = ratio(a, repr_name)
  bn, bd = ratio(b, repr_name)
  if bn == 0:
    raise ValueError(f"division by zero: {a} / {b}")
  return numbers.format_ratio(an * bd, ad * bn, "frac")


def reduce(num: int, den: int) -> tuple[int, int]:
  g = math.gcd(num, den)
  return num // g, den // g
