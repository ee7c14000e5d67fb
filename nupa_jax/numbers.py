"""Exact non-negative numbers in the four NUPA representations: syntax, parts, values.

A number is split into *parts* (paper A.1.7): the unit in which digit match and dlength align
digits and in which the text layer reverses, pads and hints. Integer-like parts align from the
right (least significant digit), decimal parts from the left.
"""
import fractions
import math
import re

REPRS = ("int", "float", "frac", "sci")

PARTS = {
    "int": ("int",),
    "float": ("int", "dec"),
    "frac": ("num", "den"),
    "sci": ("int", "dec", "exp"),
}

PART_ALIGN = {"int": "right", "dec": "left", "num": "right", "den": "right", "exp": "right"}

_SYNTAX = {
    "int": re.compile(r"(\d+)"),
    "float": re.compile(r"(\d+)\.(\d+)"),
    "frac": re.compile(r"(\d+)/(\d+)"),
    "sci": re.compile(r"(\d+)\.(\d+)e(\d+)"),
}

_SEPARATORS = {"int": (), "float": (".",), "frac": ("/",), "sci": (".", "e")}


def check_repr(repr_name: str) -> None:
  if repr_name not in _SYNTAX:
    raise ValueError(f"unknown number representation {repr_name!r}; known: {', '.join(REPRS)}")


def split_parts(text: str, repr_name: str) -> tuple[str, ...] | None:
  """Digit strings of each part as written, or None if `text` is not of that form."""
  check_repr(repr_name)
  match = _SYNTAX[repr_name].fullmatch(text)
  return match.groups() if match else None


def join_parts(parts: tuple[str, ...] | list[str], repr_name: str) -> str:
  """Inverse of `split_parts`."""
  check_repr(repr_name)
  separators = _SEPARATORS[repr_name]
  if len(parts) != len(separators) + 1:
    raise ValueError(f"{repr_name} has {len(separators) + 1} parts, got {len(parts)}")
  out = [parts[0]]
  for sep, part in zip(separators, parts[1:]):
    out += [sep, part]
  return "".join(out)


# --- Exact values ---------------------------------------------------------------------------
# The public face is `parse` / `format` over `fractions.Fraction`. Task generation solves
# millions of questions, so the decimal representations also have a scaled-integer form: a
# value n * 10**exp10 with Python ints (`to_scaled`, `format_scaled`, `format_sig`). Both
# paths print through the same code, so they agree digit for digit.

_DECIMAL_REPRS = ("int", "float", "sci")


def _parts_or_raise(text: str, repr_name: str) -> tuple[str, ...]:
  syntax = _SYNTAX.get(repr_name)
  if syntax is None:
    check_repr(repr_name)
  match = syntax.fullmatch(text)
  if match is None:
    raise ValueError(f"{text!r} is not a {repr_name} number ({syntax.pattern})")
  return match.groups()


def to_scaled(text: str, repr_name: str) -> tuple[int, int]:
  """(n, exp10) with value n * 10**exp10 for an int, float or sci string."""
  parts = _parts_or_raise(text, repr_name)
  if repr_name == "int":
    return int(parts[0]), 0
  if repr_name == "float":
    return int(parts[0] + parts[1]), -len(parts[1])
  if repr_name == "sci":
    return int(parts[0] + parts[1]), int(parts[2]) - len(parts[1])
  raise ValueError("a fraction has no scaled decimal form; use to_ratio")


def to_ratio(text: str) -> tuple[int, int]:
  """(numerator, denominator) of a fraction string as written (not reduced)."""
  num, den = _parts_or_raise(text, "frac")
  if int(den) == 0:
    raise ValueError(f"{text!r} has a zero denominator")
  return int(num), int(den)


def parse(text: str, repr_name: str) -> fractions.Fraction:
  """Exact value of `text` read as `repr_name`; ValueError if it is not of that form."""
  check_repr(repr_name)
  if repr_name == "frac":
    return fractions.Fraction(*to_ratio(text))
  n, exp10 = to_scaled(text, repr_name)
  return fractions.Fraction(n * 10**exp10) if exp10 >= 0 else fractions.Fraction(n, 10**-exp10)


def format_scaled(n: int, exp10: int, repr_name: str) -> str:
  """Canonical text of n * 10**exp10 (n >= 0) as int, float or sci.

  int: plain digits; float: at least one decimal digit, no other trailing zeros (`4.0`);
  sci: mantissa in [1, 10) with a decimal part (`5.0e0`), exponent >= 0; zero prints `0.0e0`.
  """
  if repr_name not in _DECIMAL_REPRS:
    check_repr(repr_name)
    raise ValueError(f"{repr_name} is not a decimal representation; use format_ratio")
  if n < 0:
    raise ValueError(f"NUPA numbers are non-negative, got {n}e{exp10}")
  if repr_name == "sci":
    if n == 0:
      return "0.0e0"
    digits = str(n)
    exponent = len(digits) - 1 + exp10
    if exponent < 0:
      raise ValueError(f"{n}e{exp10} is below 1: NUPA scientific exponents are non-negative")
    mantissa = digits.rstrip("0")
    return f"{mantissa[0]}.{mantissa[1:] or '0'}e{exponent}"
  if exp10 >= 0:
    whole = str(n * 10**exp10) if exp10 else str(n)
    return whole if repr_name == "int" else whole + ".0"
  if repr_name == "int":
    whole, rest = divmod(n, 10**-exp10)
    if rest:
      raise ValueError(f"{n}e{exp10} is not an integer")
    return str(whole)
  scale = -exp10
  digits = str(n).rjust(scale + 1, "0")
  return f"{digits[:-scale]}.{digits[-scale:].rstrip('0') or '0'}"


def format_sig(n: int, exp10: int, sig: int) -> str:
  """n * 10**exp10 in scientific notation rounded half up to `sig` significant figures.

  The mantissa shows exactly `sig` digits (`8.0e1` for 80.0988 to 2 figures). The official
  generator rounds differently in ~10% of cases (a 5 never rounds up, an overflowing carry
  loses a factor of ten); nupa_jax uses school rounding, half up.
  """
  if sig < 2:
    raise ValueError(f"significant figures must be >= 2 (a mantissa shows a decimal digit), got {sig}")
  if n < 0:
    raise ValueError(f"NUPA numbers are non-negative, got {n}e{exp10}")
  if n == 0:
    return "0." + "0" * (sig - 1) + "e0"
  digits = str(n)
  exponent = len(digits) - 1 + exp10
  if len(digits) <= sig:
    kept = digits.ljust(sig, "0")
  else:
    head = int(digits[:sig]) + (digits[sig] >= "5")
    kept = str(head)
    if len(kept) > sig:  # 9.96 -> 10.0: one more power of ten
      kept = kept[:sig]
      exponent += 1
  if exponent < 0:
    raise ValueError(f"{n}e{exp10} is below 1: NUPA scientific exponents are non-negative")
  return f"{kept[0]}.{kept[1:]}e{exponent}"


def _power_of_ten_scale(den: int) -> int | None:
  """Smallest k with den | 10**k, or None if den has a prime factor other than 2 and 5."""
  twos = (den & -den).bit_length() - 1
  den >>= twos
  fives = 0
  while den % 5 == 0:
    den //= 5
    fives += 1
  return max(twos, fives) if den == 1 else None


def format_ratio(num: int, den: int, repr_name: str) -> str:
  """Canonical text of the value num/den (den > 0) in any representation.

  frac: reduced, `2/1` for integers; float / sci: only values with a finite decimal
  expansion (denominator 2^a 5^b), else ValueError; int: only integers.
  """
  if den <= 0 or num < 0:
    raise ValueError(f"{num}/{den} is not a non-negative number with a positive denominator")
  g = math.gcd(num, den)
  num, den = num // g, den // g
  if repr_name == "frac":
    return f"{num}/{den}"
  check_repr(repr_name)
  scale = _power_of_ten_scale(den)
  if scale is None or (repr_name == "int" and den != 1):
    raise ValueError(f"{num}/{den} has no exact {repr_name} form")
  return format_scaled(num * (10**scale // den), -scale, repr_name)


def format(value: fractions.Fraction | int, repr_name: str) -> str:  # pylint: disable=redefined-builtin
  """Canonical text of an exact value; ValueError if the representation cannot hold it."""
  value = fractions.Fraction(value)
  return format_ratio(value.numerator, value.denominator, repr_name)
