"""RF-CoT rules on integers, and the integer helpers the other representations call.

Each function is the rule a prompt shows, verbatim from `def` on, and the code the tracer
executes (interpreter.py), so it is written for reading one step at a time: numbers stay digit
strings, loops walk them in small units with explicit carries, borrows and remainders, and
each step is an operation a model can do at a glance. The units follow the paper's integer
addition (three-digit chunks from the right):
- add / sub: three-digit chunks from the right with a carry / borrow (the paper's rule);
- multiply: long multiplication by columns of three-digit chunks: both numbers are cut into
  chunks from the right in one step (as with thousands separators), then each column sums
  its products of two chunks and passes a carry on;
- floordiv / mod: long division, one digit of the dividend at a time; the unit is one
  quotient digit (remainder // divisor, always 0-9) and the new remainder;
- max: lengths first, then three-digit chunks from the left;
- digit_max: three-digit chunks from the right, the larger digit at each place;
- get_digit / length: walking three-digit chunks from the left.
The functions have no docstrings and few comments because the prompt shows their source
(comments and docstrings would cost context), and 2-space indentation like the rest of the
package (fewer tokens than 4). Rules take and return strings, as the task's text does.
"""
# pylint: disable=missing-function-docstring
from nupa_jax.rfcot.interpreter import rule


@rule
def add_int(num1, num2):
  result = ''
  carry = 0
  while num1 or num2:
    chunk1 = int(num1[-3:]) if num1 else 0
    chunk2 = int(num2[-3:]) if num2 else 0

    total = chunk1 + chunk2 + carry

    result = str(total % 1000).zfill(3) + result
    carry = total // 1000

    num1 = num1[:-3]
    num2 = num2[:-3]
  if carry:
    result = str(carry) + result
  result = result.lstrip('0') or '0'
  return result


@rule
def sub_int(num1, num2):
  # num1 >= num2
  result = ''
  borrow = 0
  while num1:
    chunk1 = int(num1[-3:])
    chunk2 = int(num2[-3:]) if num2 else 0

    total = chunk1 - chunk2 - borrow
    if total < 0:
      total = total + 1000
      borrow = 1
    else:
      borrow = 0
    result = str(total).zfill(3) + result

    num1 = num1[:-3]
    num2 = num2[:-3]
  result = result.lstrip('0') or '0'
  return result


@rule
def multiply_int(num1, num2):
  a = [int(num1[max(i - 3, 0):i]) for i in range(len(num1), 0, -3)]
  b = [int(num2[max(i - 3, 0):i]) for i in range(len(num2), 0, -3)]
  result = ''
  carry = 0
  k = 0
  while k < len(a) + len(b) - 1:
    total = carry
    i = max(0, k - len(b) + 1)
    last = min(k, len(a) - 1)
    while i <= last:
      total = total + a[i] * b[k - i]
      i = i + 1

    result = str(total % 1000).zfill(3) + result
    carry = total // 1000
    k = k + 1
  if carry:
    result = str(carry) + result
  result = result.lstrip('0') or '0'
  return result


@rule
def floordiv_int(num1, num2):
  divisor = int(num2)
  result = ''
  rem = 0
  while num1:
    rem = rem * 10 + int(num1[0])
    digit = rem // divisor
    rem = rem - digit * divisor
    result = result + str(digit)
    num1 = num1[1:]
  result = result.lstrip('0') or '0'
  return result


@rule
def mod_int(num1, num2):
  divisor = int(num2)
  rem = 0
  while num1:
    rem = rem * 10 + int(num1[0])
    digit = rem // divisor
    rem = rem - digit * divisor
    num1 = num1[1:]
  return str(rem)


@rule
def max_int(num1, num2):
  if len(num1) > len(num2):
    return num1
  if len(num1) < len(num2):
    return num2
  i = 0
  while i < len(num1):
    chunk1 = int(num1[i:i + 3])
    chunk2 = int(num2[i:i + 3])
    if chunk1 > chunk2:
      return num1
    if chunk1 < chunk2:
      return num2
    i = i + 3
  return num1


@rule
def digit_max_int(num1, num2):
  result = ''
  while num1 or num2:
    chunk1 = num1[-3:].zfill(3)
    chunk2 = num2[-3:].zfill(3)

    best = max(chunk1[0], chunk2[0]) + max(chunk1[1], chunk2[1]) + max(chunk1[2], chunk2[2])
    result = best + result

    num1 = num1[:-3]
    num2 = num2[:-3]
  result = result.lstrip('0') or '0'
  return result


@rule
def get_digit_int(num, pos):
  pos = int(pos)
  start = 0
  chunk = num[0:3]
  while start + 3 <= pos:
    start = start + 3
    chunk = num[start:start + 3]
  return chunk[pos - start]


@rule
def length_int(num):
  count = 0
  chunk = num[0:3]
  while chunk:
    count = count + len(chunk)
    chunk = num[count:count + 3]
  return str(count)
