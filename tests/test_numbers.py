"""nupa_jax.numbers against hand-worked values and decimal / fractions oracles."""
import decimal
import fractions
import math
import random

import pytest

from nupa_jax import numbers

F = fractions.Fraction


@pytest.mark.parametrize("text, repr_name, parts", [
    ("0042", "int", ("0042",)),
    ("012.50", "float", ("012", "50")),
    ("6/4", "frac", ("6", "4")),
    ("9.8302e18", "sci", ("9", "8302", "18")),
])
def test_split_and_join_parts(text, repr_name, parts):
  assert numbers.split_parts(text, repr_name) == parts
  assert numbers.join_parts(parts, repr_name) == text


@pytest.mark.parametrize("text, repr_name", [
    ("1.5", "int"), ("12", "float"), ("1.", "float"), ("3", "frac"), ("1.5e", "sci"),
    ("5e3", "sci"), ("-1", "int"), (" 1", "int"), ("1_000", "int"),
])
def test_split_parts_rejects_other_forms(text, repr_name):
  assert numbers.split_parts(text, repr_name) is None
  with pytest.raises(ValueError, match=repr_name):
    numbers.parse(text, repr_name)


def test_unknown_representation_names_the_known_ones():
  with pytest.raises(ValueError, match="int, float, frac, sci"):
    numbers.parse("1", "decimal")


@pytest.mark.parametrize("text, repr_name, value", [
    ("007", "int", F(7)),
    ("012.50", "float", F(25, 2)),
    ("0.05", "float", F(1, 20)),
    ("6/4", "frac", F(3, 2)),
    ("0/7", "frac", F(0)),
    ("9.8302e18", "sci", F(98302 * 10**14)),
    ("1.25e0", "sci", F(5, 4)),
])
def test_parse_hand_values(text, repr_name, value):
  assert numbers.parse(text, repr_name) == value


def test_parse_rejects_zero_denominator():
  with pytest.raises(ValueError, match="zero denominator"):
    numbers.parse("3/0", "frac")


@pytest.mark.parametrize("value, repr_name, text", [
    # Paper A.1 examples.
    (F(4), "float", "4.0"),
    (F(103786, 1000), "float", "103.786"),
    (F(2), "frac", "2/1"),
    (F(6, 4), "frac", "3/2"),
    (F(5), "sci", "5.0e0"),
    (F(98302 * 10**14), "sci", "9.8302e18"),
    (F(0), "int", "0"),
    (F(0), "float", "0.0"),
    (F(0), "frac", "0/1"),
    (F(0), "sci", "0.0e0"),
    (F(1, 20), "float", "0.05"),
    (F(1007, 100), "float", "10.07"),
    (F(10**30), "sci", "1.0e30"),
    (F(12), "int", "12"),
])
def test_format_hand_values(value, repr_name, text):
  assert numbers.format(value, repr_name) == text


@pytest.mark.parametrize("value, repr_name", [
    (F(1, 3), "float"), (F(1, 3), "sci"), (F(1, 2), "int"), (F(1, 2), "sci"), (F(-1), "int"),
    (F(-1, 2), "frac"),
])
def test_format_raises_without_an_exact_form(value, repr_name):
  with pytest.raises(ValueError):
    numbers.format(value, repr_name)


def _decimal_oracle(value: F, repr_name: str) -> str:
  """Canonical text through the decimal module (exact: the denominators are 2^a 5^b)."""
  with decimal.localcontext() as ctx:
    ctx.prec = 1000
    d = (decimal.Decimal(value.numerator) / decimal.Decimal(value.denominator)).normalize()
  _, digits, exponent = d.as_tuple()
  if repr_name == "float":
    text = f"{d:f}"
    return text if "." in text else text + ".0"
  digits = "".join(map(str, digits))
  return f"{digits[0]}.{digits[1:] or '0'}e{len(digits) - 1 + exponent}"


def _random_decimal_value(rng: random.Random) -> F:
  return F(rng.randrange(1, 10**rng.randint(1, 40)), 2**rng.randint(0, 30) * 5**rng.randint(0, 30))


def test_format_matches_decimal_oracle_and_round_trips():
  rng = random.Random(0)
  for _ in range(2000):
    value = _random_decimal_value(rng)
    text = numbers.format(value, "float")
    assert text == _decimal_oracle(value, "float")
    assert numbers.parse(text, "float") == value
    whole, dec = text.split(".")
    assert whole == "0" or not whole.startswith("0")
    assert dec == "0" or not dec.endswith("0")
    if value >= 1:
      text = numbers.format(value, "sci")
      assert text == _decimal_oracle(value, "sci")
      assert numbers.parse(text, "sci") == value
      assert 1 <= numbers.parse(text.split("e")[0], "float") < 10
    text = numbers.format(value, "frac")
    assert numbers.parse(text, "frac") == value
    num, den = map(int, text.split("/"))
    assert math.gcd(num, den) == 1


def test_scaled_forms_agree_with_exact_values():
  rng = random.Random(1)
  for _ in range(2000):
    n, exp10 = rng.randrange(0, 10**rng.randint(1, 30)), rng.randint(-25, 25)
    value = F(n) * F(10)**exp10
    for repr_name in ("float", "sci", "int"):
      try:
        expected = numbers.format(value, repr_name)
      except ValueError:
        with pytest.raises(ValueError):
          numbers.format_scaled(n, exp10, repr_name)
        continue
      assert numbers.format_scaled(n, exp10, repr_name) == expected
      m, e = numbers.to_scaled(expected, repr_name)
      assert F(m) * F(10)**e == value


@pytest.mark.parametrize("n, exp10, sig, text", [
    (800988, -4, 2, "8.0e1"),     # 80.0988: the official data says 8.00e1
    (9996, 0, 2, "1.0e4"),        # carry into a new digit (official: 1.000e3)
    (60454, 0, 3, "6.05e4"),      # a 5 rounds up (official: 6.04e4)
    (20931, 0, 3, "2.09e4"),
    (65669, -3, 2, "6.6e1"),      # paper A.1.3 example
    (50194, 0, 3, "5.02e4"),      # paper A.1.3 example
    (5, 0, 4, "5.000e0"),         # fewer digits than figures: zeros fill the mantissa
])
def test_format_sig_rounds_half_up(n, exp10, sig, text):
  assert numbers.format_sig(n, exp10, sig) == text


def test_format_sig_matches_decimal_round_half_up():
  rng = random.Random(2)
  for _ in range(3000):
    n = rng.randrange(1, 10**rng.randint(1, 30))
    exp10 = rng.randint(-len(str(n)) + 1, 10)
    sig = rng.randint(2, 25)
    value = decimal.Decimal(n).scaleb(exp10)
    exponent = value.adjusted()
    mantissa = value.scaleb(-exponent).quantize(decimal.Decimal(1).scaleb(1 - sig),
                                                 rounding=decimal.ROUND_HALF_UP)
    if mantissa >= 10:
      mantissa, exponent = (mantissa / 10).quantize(decimal.Decimal(1).scaleb(1 - sig)), exponent + 1
    assert numbers.format_sig(n, exp10, sig) == f"{mantissa}e{exponent}"


def test_format_scaled_is_for_decimal_representations():
  with pytest.raises(ValueError, match="format_ratio"):
    numbers.format_scaled(3, 0, "frac")


def test_format_sig_needs_two_figures():
  with pytest.raises(ValueError, match=">= 2"):
    numbers.format_sig(5, 0, 1)
