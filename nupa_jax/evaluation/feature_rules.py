"""How a generated token's positional-encoding features follow from the previous token's.

A PE that reads per-token text features (Abacus: `digit_index`; coupled positions:
`significance`) needs them for every token the model generates, where no encoder can compute
them ahead: each feature has a rule (`generate.FeatureRule`) that continues it token by token.
`next_features` picks the rule for a run's features, text format and answer kinds, and says
why none applies (e.g. significance needs units-first integer answers).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import jax
import jax.numpy as jnp

from nupa_jax.evaluation import generate as generate_lib
from nupa_jax.text import Encoder
from nupa_jax.text import formats as formats_lib
from nupa_jax.text import positions as positions_lib


@dataclasses.dataclass(frozen=True)
class SignificanceRuns:
  """Coupled-position significance of a generated token, for integer answers written units
  first in one-digit tokens: the units digit (the first number token) is SIGNIFICANCE_UNITS,
  each following digit one power higher, any other token 0 — the text layer's values
  (`text.positions`) for such answers, which a decoder can follow token by token."""
  number_tokens: tuple[bool, ...]  # per token id: is it a number (digit) token

  def __call__(self, previous: generate_lib.Features, token: jax.Array) -> generate_lib.Features:
    is_number = jnp.asarray(self.number_tokens)[token]
    last = previous["significance"]
    following = jnp.where(last > 0, last + 1, positions_lib.SIGNIFICANCE_UNITS)
    return {"significance": jnp.where(is_number, following, 0)}


def _number_tokens(encoder: Encoder) -> tuple[bool, ...]:
  return tuple(token.isdigit() for token in encoder.tokens)


def _digit_runs(encoder: Encoder, text_format: Mapping, answer_reprs: set[str]):
  del answer_reprs
  if text_format.get("index_hints", False):
    raise ValueError("digit_index has one only without index hints (hint tokens between digits "
                     "would restart its count)")
  return generate_lib.DigitRuns(_number_tokens(encoder))


def _significance_runs(encoder: Encoder, text_format: Mapping, answer_reprs: set[str]):
  reverse = text_format.get("reverse", "none")
  units_first = "int" in formats_lib.REVERSE_MODES[reverse].kinds
  one_digit = all(len(t) == 1 for t, number in zip(encoder.tokens, _number_tokens(encoder))
                  if number)
  if not (units_first and answer_reprs == {"int"} and one_digit
          and not text_format.get("index_hints", False)):
    raise ValueError("significance has one only for integer answers written units first "
                     "(text format reverse: int, each or total), one-digit tokens and no index "
                     f"hints; this run has reverse={reverse!r}, answers {sorted(answer_reprs)}, "
                     f"{'one' if one_digit else 'multi'}-digit tokens")
  return SignificanceRuns(_number_tokens(encoder))


# Feature -> builder(encoder, text format, answer representations) of the rule that continues
# it through generated tokens (generate.py); a builder raises ValueError saying when it applies.
FEATURE_RULES = {"digit_index": _digit_runs, "significance": _significance_runs}


def next_features(encoder: Encoder, feature_names: frozenset[str], text_format: Mapping,
                   answer_reprs: set[str]):
  """How a generated token's PE features follow from the previous ones (generate.py)."""
  if not feature_names:
    return None
  name = next(iter(feature_names)) if len(feature_names) == 1 else None
  try:
    if name not in FEATURE_RULES:
      raise ValueError(f"rules exist for one of {', '.join(FEATURE_RULES)}")
    return FEATURE_RULES[name](encoder, text_format, answer_reprs)
  except ValueError as e:
    raise ValueError(f"evaluating a positional encoding that reads {sorted(feature_names)} "
                     f"needs a rule for generated tokens: {e}") from None
