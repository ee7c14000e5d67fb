"""RF-CoT rules on floats and scientific notation: reduce to the integer rules, then place the
point (float) or normalise the mantissa (sci).

A float `int.dec` is the integer `int dec` scaled by 10^-len(dec); a scientific number
`i.dec e x` is the integer `i dec` times 10^(x - len(dec)) (`low`, the power of its last
digit). add / sub pad the decimal parts (float) or append zeros (sci) so that both integers
share one scale, call the integer rule and put the point back; multiply adds the scales.
Comparisons: floats compare their padded digit strings as integers (canonical floats have no
leading zeros, so equal scales make this exact); scientific numbers compare exponents first
(mantissas lie in [1, 10)), then mantissas as floats. See rules_integer.py for why the
functions carry no docstrings.
"""
# pylint: disable=missing-function-docstring
from nupa_jax.rfcot.interpreter import rule
from nupa_jax.rfcot.rules_integer import add_int, get_digit_int, max_int, multiply_int, sub_int


@rule
def place_dot(digits, width):
  digits = digits.zfill(width + 1)
  whole = digits[:-width]
  frac = digits[-width:].rstrip('0') or '0'
  return whole + '.' + frac


@rule
def align_float(num1, num2):
  int1, dec1 = num1.split('.')
  int2, dec2 = num2.split('.')
  width = max(len(dec1), len(dec2))
  full1 = int1 + dec1 + '0' * (width - len(dec1))
  full2 = int2 + dec2 + '0' * (width - len(dec2))
  return full1, full2, width


@rule
def add_float(num1, num2):
  full1, full2, width = align_float(num1, num2)
  total = add_int(full1, full2)
  return place_dot(total, width)


@rule
def sub_float(num1, num2):
  full1, full2, width = align_float(num1, num2)
  total = sub_int(full1, full2)
  return place_dot(total, width)


@rule
def multiply_float(num1, num2):
  int1, dec1 = num1.split('.')
  int2, dec2 = num2.split('.')
  width = len(dec1) + len(dec2)
  product = multiply_int(int1 + dec1, int2 + dec2)
  return place_dot(product, width)


@rule
def max_float(num1, num2):
  full1, full2, width = align_float(num1, num2)
  larger = max_int(full1, full2)
  if larger == full1:
    return num1
  return num2


@rule
def get_digit_float(num, pos):
  whole, dec = num.split('.')
  return get_digit_int(whole + dec, pos)


@rule
def to_sci(digits, low):
  digits = digits.lstrip('0')
  if not digits:
    return '0.0e0'
  exponent = low + len(digits) - 1
  mantissa = digits[1:].rstrip('0') or '0'
  return digits[0] + '.' + mantissa + 'e' + str(exponent)


@rule
def align_sci(num1, num2):
  base1, exp1 = num1.split('e')
  base2, exp2 = num2.split('e')
  int1, dec1 = base1.split('.')
  int2, dec2 = base2.split('.')
  low1 = int(exp1) - len(dec1)
  low2 = int(exp2) - len(dec2)
  low = min(low1, low2)
  full1 = int1 + dec1 + '0' * (low1 - low)
  full2 = int2 + dec2 + '0' * (low2 - low)
  return full1, full2, low


@rule
def add_sci(num1, num2):
  full1, full2, low = align_sci(num1, num2)
  total = add_int(full1, full2)
  return to_sci(total, low)


@rule
def sub_sci(num1, num2):
  full1, full2, low = align_sci(num1, num2)
  total = sub_int(full1, full2)
  return to_sci(total, low)


@rule
def multiply_sci(num1, num2):
  base1, exp1 = num1.split('e')
  base2, exp2 = num2.split('e')
  int1, dec1 = base1.split('.')
  int2, dec2 = base2.split('.')
  low = int(exp1) - len(dec1) + int(exp2) - len(dec2)
  product = multiply_int(int1 + dec1, int2 + dec2)
  return to_sci(product, low)


@rule
def max_sci(num1, num2):
  base1, exp1 = num1.split('e')
  base2, exp2 = num2.split('e')
  if int(exp1) > int(exp2):
    return num1
  if int(exp1) < int(exp2):
    return num2
  larger = max_float(base1, base2)
  if larger == base1:
    return num1
  return num2
