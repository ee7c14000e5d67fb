"""Comparison tasks: max, min and their hard variants (paper A.1.6, docs/official_data.md).

- max / min: a plain pair; fractions above 1 are inverted so that both lie in [0, 1] and
  comparing with 1 does not give the answer away. Fractions are a 20-digit task, the rest 100.
- max_hard / min_hard ("harder compare" data):
  int: both numbers of length L, the second copies a prefix of the first of length uniform in
  0..L-1; float: with p = 0.7 the second takes the first's integer part and a prefix (uniform
  0..shorter-1) of its decimals; sci: with p = 0.8 the second takes the first's exponent, and
  with k uniform in -1..shorter-1, k >= 0 copies the mantissa digit and the first k decimals.
  The prefix is copied before the pair's random swap, as in the official generator.
"""
import numpy as np

from nupa_jax import numbers
from nupa_jax.tasks import random_numbers as rn
from nupa_jax.tasks import registry
from nupa_jax.tasks import values

_FLOAT_SHARE = (7, 10)     # p that a hard float pair shares the integer part and a prefix
_SCI_SAME_EXPONENT = (8, 10)


def _below_one(text: str) -> str:
  num, den = text.split("/")
  return f"{den}/{num}" if int(num) > int(den) else text


def _sample_plain(repr_name: str):
  def sample(rng: np.random.Generator, length: int) -> tuple[str, str]:
    a, b = rn.pair(rng, length, repr_name)
    if repr_name == "frac":
      return _below_one(a), _below_one(b)
    return a, b
  return sample


def _hard_int(rng: np.random.Generator, length: int) -> tuple[str, str]:
  a, b = rn.integer(rng, length), rn.integer(rng, length)
  keep = rn.randbelow(rng, length)
  return a, a[:keep] + b[keep:]


def _hard_float(rng: np.random.Generator, length: int) -> tuple[str, str]:
  short, swap = rn.shorter_length_and_swap(rng, length)
  a, b = rn.float_(rng, length), rn.float_(rng, short)
  keep, share = divmod(rn.randbelow(rng, _FLOAT_SHARE[1] * short), _FLOAT_SHARE[1])
  if share < _FLOAT_SHARE[0]:
    a_int, a_dec = a.split(".")
    b = f"{a_int}.{a_dec[:keep]}{b.split('.')[1][keep:]}"
  return (b, a) if swap else (a, b)


def _hard_sci(rng: np.random.Generator, length: int) -> tuple[str, str]:
  short, swap = rn.shorter_length_and_swap(rng, length)
  a_lead, a_dec, a_exp = rn.scientific(rng, length)
  b_lead, b_dec, b_exp = rn.scientific(rng, short)
  keep, same = divmod(rn.randbelow(rng, _SCI_SAME_EXPONENT[1] * (short + 1)),
                      _SCI_SAME_EXPONENT[1])
  if same < _SCI_SAME_EXPONENT[0]:
    b_exp = a_exp
  keep -= 1  # -1: b keeps its own mantissa
  if keep >= 0:
    b_lead, b_dec = a_lead, a_dec[:keep] + b_dec[keep:]
  a, b = f"{a_lead}.{a_dec}e{a_exp}", f"{b_lead}.{b_dec}e{b_exp}"
  return (b, a) if swap else (a, b)


_HARD_SAMPLERS = {"int": _hard_int, "float": _hard_float, "sci": _hard_sci}


def _solver(repr_name: str, larger: bool):
  def solve(a: str, b: str) -> str:
    if repr_name == "frac":
      pick = a if (values.compare(a, b, "frac") >= 0) == larger else b
      return values.canonical(pick, "frac")
    x, y, e = values.aligned(a, b, repr_name)
    return numbers.format_scaled(x if (x >= y) == larger else y, e, repr_name)
  return solve


def _register() -> None:
  for kind, larger in (("max", True), ("min", False)):
    for repr_name in ("int", "float", "frac", "sci"):
      registry.register(kind, repr_name, sampler=_sample_plain(repr_name),
                        solver=_solver(repr_name, larger),
                        max_digits=20 if repr_name == "frac" else 100)
    for repr_name, sampler in _HARD_SAMPLERS.items():
      registry.register(f"{kind}_hard", repr_name, sampler=sampler,
                        solver=_solver(repr_name, larger), max_digits=100)


_register()
