"""Conversion tasks: to_float (frac, sci), to_scient (int, float), sig (int, float).

- to_float (frac), a 20-digit task: the numerator is the larger of a random length-L fraction's
  numerator and denominator, the denominator 2^i 5^j with i, j uniform in 0..L, reduced; drawn
  again until the question has length L (the official data lets it drift to L+1).
- to_float (sci): the exponent is redrawn uniform in 0..min(exponent, L) so the float stays short.
- to_scient (int): the last z digits are set to 0, z uniform in 0..floor(L/2), so answers have
  fewer significant digits than the question.
- sig: significant figures uniform in [2, max(2, digits of the number)]; answers round half up
  (the official generator does not: see `numbers.format_sig`).
Integers for to_scient and sig are never 0 (length 1 draws 1-9): 0 has no scientific form with
a mantissa in [1, 10). Floats are >= 1 by construction.
"""
import numpy as np

from nupa_jax import numbers
from nupa_jax.tasks import random_numbers as rn
from nupa_jax.tasks import registry
from nupa_jax.tasks import values


def _sample_to_float_frac(rng: np.random.Generator, length: int) -> tuple[str, None]:
  low = rn.pow10(length - 1)
  while True:
    num = max(rn.fraction(rng, length))
    num, den = values.reduce(num, 2**rn.randint(rng, 0, length) * 5**rn.randint(rng, 0, length))
    if max(num, den) >= low and den < 10 * low and num < 10 * low:
      return f"{num}/{den}", None


def _sample_to_float_sci(rng: np.random.Generator, length: int) -> tuple[str, None]:
  lead, dec, exponent = rn.scientific(rng, length)
  return f"{lead}.{dec}e{rn.randint(rng, 0, min(exponent, length))}", None


def _sample_to_scient_int(rng: np.random.Generator, length: int) -> tuple[str, None]:
  a = rn.positive_integer(rng, length)
  zeros = rn.randint(rng, 0, length // 2)
  return a[:length - zeros] + "0" * zeros, None


def _sample_sig(repr_name: str):
  def sample(rng: np.random.Generator, length: int) -> tuple[str, str]:
    a = rn.positive_integer(rng, length) if repr_name == "int" else rn.float_(rng, length)
    figures = len(a) - (repr_name == "float")
    return a, str(rn.randint(rng, 2, max(2, figures)))
  return sample


def _to_float(repr_name: str):
  def solve(a: str, b: str | None) -> str:
    return numbers.format_ratio(*values.ratio(a, repr_name), "float")
  return solve


def _to_scient(repr_name: str):
  def solve(a: str, b: str | None) -> str:
    return numbers.format_scaled(*numbers.to_scaled(a, repr_name), "sci")
  return solve


def _sig(repr_name: str):
  def solve(a: str, b: str | None) -> str:
    return numbers.format_sig(*numbers.to_scaled(a, repr_name), values.short(b))
  return solve


def _register() -> None:
  registry.register("to_float", "frac", sampler=_sample_to_float_frac, solver=_to_float("frac"),
                    max_digits=20, answer_repr="float", second=None)
  registry.register("to_float", "sci", sampler=_sample_to_float_sci, solver=_to_float("sci"),
                    max_digits=100, answer_repr="float", second=None)
  registry.register("to_scient", "int", sampler=_sample_to_scient_int, solver=_to_scient("int"),
                    max_digits=100, answer_repr="sci", second=None)
  registry.register("to_scient", "float",
                    sampler=lambda rng, length: (rn.float_(rng, length), None),
                    solver=_to_scient("float"), max_digits=100, answer_repr="sci", second=None)
  for repr_name in ("int", "float"):
    registry.register("sig", repr_name, sampler=_sample_sig(repr_name), solver=_sig(repr_name),
                      max_digits=100, answer_repr="sci", second="short")


_register()
