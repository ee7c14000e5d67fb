"""Independent answers to NUPA questions with fractions.Fraction, decimal and plain strings.

Shared by the task tests; nothing here imports nupa_jax, so the tasks are checked against a
second implementation of the paper's definitions rather than against themselves.
"""
import decimal
import fractions
import itertools

F = fractions.Fraction
_CONTEXT = decimal.Context(prec=2000)


def value(text: str) -> F:
  """Exact value of an int, float, frac or sci string (Fraction parses all four forms)."""
  return F(text)


def _digits_and_exponent(v: F) -> tuple[str, int]:
  """v = int(digits) * 10**exponent with no trailing zeros in digits (v > 0, finite decimal)."""
  d = _CONTEXT.divide(decimal.Decimal(v.numerator), decimal.Decimal(v.denominator))
  d = d.normalize(_CONTEXT)
  _, digits, exponent = d.as_tuple()
  return "".join(map(str, digits)), exponent


def text(v: F, repr_name: str) -> str:
  """The paper's canonical spelling of v."""
  if repr_name == "int":
    assert v.denominator == 1, v
    return str(v.numerator)
  if repr_name == "frac":
    return f"{v.numerator}/{v.denominator}"
  if v == 0:
    return "0.0" if repr_name == "float" else "0.0e0"
  digits, exponent = _digits_and_exponent(v)
  if repr_name == "sci":
    return f"{digits[0]}.{digits[1:] or '0'}e{len(digits) - 1 + exponent}"
  if exponent >= 0:
    return digits + "0" * exponent + ".0"
  point = len(digits) + exponent
  if point <= 0:
    return "0." + "0" * -point + digits
  return digits[:point] + "." + digits[point:]


def sig_text(v: F, figures: int) -> str:
  """v rounded half up to `figures` significant figures, mantissa showing all of them."""
  d = _CONTEXT.divide(decimal.Decimal(v.numerator), decimal.Decimal(v.denominator))
  exponent = d.adjusted()
  quantum = decimal.Decimal(1).scaleb(1 - figures)
  mantissa = d.scaleb(-exponent, _CONTEXT).quantize(quantum, decimal.ROUND_HALF_UP, _CONTEXT)
  if mantissa >= 10:
    exponent += 1
    mantissa = d.scaleb(-exponent, _CONTEXT).quantize(quantum, decimal.ROUND_HALF_UP, _CONTEXT)
  return f"{mantissa}e{exponent}"


def _digitwise(a: str, b: str, op) -> str:
  """Integer parts aligned right, decimal parts left, missing digits 0, read back as a number."""
  a_int, _, a_dec = a.partition(".")
  b_int, _, b_dec = b.partition(".")
  whole = [op(int(x), int(y)) for x, y in
           itertools.zip_longest(a_int[::-1], b_int[::-1], fillvalue="0")][::-1]
  dec = [op(int(x), int(y)) for x, y in itertools.zip_longest(a_dec, b_dec, fillvalue="0")]
  result = "".join(map(str, whole)) + ("." + "".join(map(str, dec)) if "." in a else "")
  return text(value(result), "float" if "." in a else "int")


_BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "multiply": lambda x, y: x * y,
    "truediv": lambda x, y: x / y,
    "floordiv": lambda x, y: F(x // y),
    "mod": lambda x, y: x % y,
    "max": max,
    "min": min,
}
_DIGITWISE = {"digit_max": max, "digit_min": min, "digit_add": lambda x, y: (x + y) % 10}


def base_kind(kind: str) -> str:
  """add_easy -> add, multiply_hard -> multiply, max_hard -> max, mod_easy -> mod."""
  return kind.replace("_hard", "").replace("_easy", "")


def answer(kind: str, answer_repr: str, a: str, b: str | None) -> str:
  """The expected answer of a question of task kind `kind`."""
  kind = base_kind(kind)
  if kind in _BINARY:
    return text(_BINARY[kind](value(a), value(b)), answer_repr)
  if kind in _DIGITWISE:
    return _digitwise(a, b, _DIGITWISE[kind])
  all_digits = a.replace(".", "")
  if kind == "get_digit":
    return all_digits[int(b)]
  if kind == "length":
    return str(len(all_digits))
  if kind == "count":
    return str(sum(digit == b for digit in all_digits))
  if kind in ("to_float", "to_scient"):
    return text(value(a), answer_repr)
  if kind == "sig":
    return sig_text(value(a), int(b))
  raise KeyError(kind)
