"""RF-CoT rules on fractions: cross-multiply with the integer rules, then reduce.

add / sub / multiply build the unreduced numerator and denominator with the integer rules and
reduce by the greatest common divisor (Euclid's algorithm, one remainder `a % b` a step; its quotients
are small) and two long divisions. max compares the decimal
expansions digit by digit — one quotient digit and remainder per step, like long division —
which stops at the first digit where the two differ (a step or two for random fractions),
far shorter than cross-multiplying; it relies on the task's fractions being reduced, so that
equal values are equal strings. See rules_integer.py for why the functions carry no
docstrings.
"""
# pylint: disable=missing-function-docstring
from nupa_jax.rfcot.interpreter import rule
from nupa_jax.rfcot.rules_integer import add_int, floordiv_int, multiply_int, sub_int


@rule
def gcd(num1, num2):
  a = int(num1)
  b = int(num2)
  while b:
    r = a % b
    a = b
    b = r
  return str(a)


@rule
def reduce_frac(num, den):
  g = gcd(num, den)
  num = floordiv_int(num, g)
  den = floordiv_int(den, g)
  return num + '/' + den


@rule
def cross_frac(frac1, frac2):
  num1, den1 = frac1.split('/')
  num2, den2 = frac2.split('/')
  left = multiply_int(num1, den2)
  right = multiply_int(num2, den1)
  den = multiply_int(den1, den2)
  return left, right, den


@rule
def add_frac(frac1, frac2):
  left, right, den = cross_frac(frac1, frac2)
  num = add_int(left, right)
  return reduce_frac(num, den)


@rule
def sub_frac(frac1, frac2):
  left, right, den = cross_frac(frac1, frac2)
  num = sub_int(left, right)
  return reduce_frac(num, den)


@rule
def multiply_frac(frac1, frac2):
  num1, den1 = frac1.split('/')
  num2, den2 = frac2.split('/')
  num = multiply_int(num1, num2)
  den = multiply_int(den1, den2)
  return reduce_frac(num, den)


@rule
def max_frac(frac1, frac2):
  if frac1 == frac2:
    return frac1
  num1, den1 = frac1.split('/')
  num2, den2 = frac2.split('/')
  rem1 = int(num1)
  rem2 = int(num2)
  d1 = int(den1)
  d2 = int(den2)
  digit1 = rem1 // d1
  digit2 = rem2 // d2
  while digit1 == digit2:
    rem1 = (rem1 - digit1 * d1) * 10
    rem2 = (rem2 - digit2 * d2) * 10
    digit1 = rem1 // d1
    digit2 = rem2 // d2
  if digit1 > digit2:
    return frac1
  return frac2
