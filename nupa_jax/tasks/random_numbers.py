"""Random NUPA numbers of a given length, drawn from the caller's numpy Generator only.

Every draw is exact: `randbelow` takes whole 64-bit words from the generator's bit generator
and rejects the few values that would bias the modulus, so an L-digit integer is uniform over
all L-digit integers for any L (numpy's own `integers` stops at 64 bits). A bit-generator call
costs well under a microsecond and one draw yields a whole number (several uniform fields are
packed into one draw by mixed radix), so a question costs a handful of calls, not one per digit.

Lengths and shapes follow the official generator (docs/official_data.md):
- int of length L: uniform over L-digit integers (L = 1: 0-9);
- float: decimal part of exactly L digits with a nonzero last digit; integer part of d digits,
  d uniform in 1..L, never 0 (so floats are >= 1 and their longest part is the decimal one);
- frac: numerator uniform in [0, 10^L), denominator uniform over L-digit numbers, reduced, and
  redrawn until the reduced denominator still has L digits (0 prints 0/1 at L = 1);
- sci: mantissa digit 1-9, decimal part as a float's, exponent uniform in 0..99 — 0..9 at L = 1,
  so that the exponent is never the longest part (a question's length counts every part).
"""
import math

import numpy as np

_TWO64 = 1 << 64
_POW10 = [10**k for k in range(256)]


def pow10(k: int) -> int:
  return _POW10[k] if k < 256 else 10**k


def randbelow(rng: np.random.Generator, n: int) -> int:
  """Uniform integer in [0, n), exact for any n >= 1.

  Whole 64-bit words from the bit generator; a word (or group of words) is rejected when it
  falls in the incomplete last block of size n, so no residue is favoured.
  """
  raw = rng.bit_generator.random_raw
  if n <= _TWO64:
    while True:
      x = raw()
      r = x % n
      if x - r <= _TWO64 - n:
        return r
  words = (n.bit_length() + 95) // 64  # >= 32 spare bits: a rejection is rarer than 2^-32
  span = 1 << (64 * words)
  while True:
    if words <= 3:  # a few scalar calls beat building an array
      x = raw()
      for _ in range(words - 1):
        x = (x << 64) | raw()
    else:
      x = int.from_bytes(raw(words).tobytes(), "little")
    r = x % n
    if x - r <= span - n:
      return r


def randint(rng: np.random.Generator, low: int, high: int) -> int:
  """Uniform integer in [low, high], both ends included."""
  return low + randbelow(rng, high - low + 1)


def integer(rng: np.random.Generator, length: int) -> str:
  """Uniform over integers with exactly `length` digits (0-9 for length 1)."""
  if length == 1:
    return str(randbelow(rng, 10))
  low = pow10(length - 1)
  return str(low + randbelow(rng, 9 * low))


def positive_integer(rng: np.random.Generator, length: int) -> str:
  """Like `integer`, without 0 at length 1 (for tasks whose answer is scientific)."""
  low = pow10(length - 1)
  return str(low + randbelow(rng, 9 * low))


def _nonzero_last(x: int, length: int) -> str:
  """The x-th of the 9 * 10^(length-1) digit strings of `length` with a nonzero last digit."""
  rest, last = divmod(x, 9)
  return "%0*d" % (length, rest * 10 + last + 1)


def float_(rng: np.random.Generator, length: int) -> str:
  """A float with `length` decimals; integer part of 1..length digits, never 0.

  One draw: (integer digits d, decimals, integer part) with the integer part taken mod
  9 * 10^(d-1), which divides 9 * 10^(length-1), so it stays exactly uniform.
  """
  block = 9 * pow10(length - 1)
  x, int_digits = divmod(randbelow(rng, block * block * length), length)
  x, whole = divmod(x, block)
  low = pow10(int_digits)
  return f"{low + whole % (9 * low)}.{_nonzero_last(x, length)}"


def fraction(rng: np.random.Generator, length: int) -> tuple[int, int]:
  """(num, den), reduced, with a `length`-digit denominator and a numerator below 10^length."""
  low = pow10(length - 1)
  while True:
    den, num = divmod(randbelow(rng, 90 * low * low), 10 * low)
    den += low
    g = math.gcd(num, den)
    if den // g >= low:
      return num // g, den // g


def exponent_max(length: int) -> int:
  """Largest exponent a sci number of this length may carry (one digit at length 1)."""
  return 9 if length == 1 else 99


def scientific(rng: np.random.Generator, length: int) -> tuple[str, str, int]:
  """(mantissa digit, decimal part, exponent) of a sci number with `length` decimals."""
  exponents = exponent_max(length) + 1
  x, exponent = divmod(randbelow(rng, 81 * pow10(length - 1) * exponents), exponents)
  x, lead = divmod(x, 9)  # mantissa digit, decimals and exponent in one draw
  return str(lead + 1), _nonzero_last(x, length), exponent


def shorter_length(rng: np.random.Generator, length: int) -> int:
  """Length of a question's second number: uniform in [max(1, floor(L/2)), L]."""
  return randint(rng, max(1, length // 2), length)


def shorter_length_and_swap(rng: np.random.Generator, length: int) -> tuple[int, bool]:
  """`shorter_length` and whether to swap the pair (p = 0.5 when the lengths differ)."""
  low = max(1, length // 2)
  x, coin_flip = divmod(randbelow(rng, 2 * (length - low + 1)), 2)
  return low + x, bool(coin_flip) and low + x != length


def number(rng: np.random.Generator, length: int, repr_name: str) -> str:
  """A random number of `length` in representation `repr_name`, as text."""
  if repr_name == "int":
    return integer(rng, length)
  if repr_name == "float":
    return float_(rng, length)
  if repr_name == "frac":
    return "%d/%d" % fraction(rng, length)
  lead, dec, exponent = scientific(rng, length)
  return f"{lead}.{dec}e{exponent}"


def pair(rng: np.random.Generator, length: int, repr_name: str) -> tuple[str, str]:
  """Two numbers: one of `length`, one of `shorter_length`, swapped with p = 0.5 if unequal."""
  short, swap = shorter_length_and_swap(rng, length)
  a = number(rng, length, repr_name)
  b = number(rng, short, repr_name)
  return (b, a) if swap else (a, b)
