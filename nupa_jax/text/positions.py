"""Per-token features for positional schemes that need the text's structure.

- `digit_index` (Abacus, McLeish et al. 2024): the 1-based ordinal of a number token within its
  part of a number (paper A.1.7's unit: an integer part, the decimals, a numerator, ...), in
  written order; a k-digit token counts once, hints are skipped. 0 for every other token
  (specials, separators, hints, task tokens). Without hints this is the length of the run of
  number tokens up to and including the token, which a decoder can follow token by token.
- `significance` (position coupling, Cho et al. 2024): SIGNIFICANCE_UNITS + p, with p the power of
  ten of the token's anchor digit within its part: for integer-like parts the token's lowest
  digit (the one nearest the units), for decimal parts its highest (nearest the point). Equal
  powers thus share a value in operands and answer, aligned k-digit tokens share one too,
  decimals stay positive (10^-1 -> SIGNIFICANCE_UNITS - 1) and reversing changes nothing.
  Numerators, denominators, exponents and short arguments count powers within themselves; a
  scientific mantissa counts them as written (its leading digit is 10^0), not shifted by the
  exponent. Values are clipped to [1, MAX_SIGNIFICANCE]; 0 marks non-digit tokens. A number still
  being generated is read as if it ended at its last token, which is exact during causal
  decoding only for parts written least significant digit first (reversed integer-like parts).

Both depend only on a sample's *signature*: one byte per token saying what it is (SIGNATURE),
never which digits it holds. The encoder memoizes on it, so the data pipeline pays for the
parsing below once per layout rather than once per sample.
"""
import itertools
import re
from collections.abc import Mapping, Sequence

import numpy as np

SIGNIFICANCE_UNITS = 256  # significance of a units digit
MAX_SIGNIFICANCE = 2 * SIGNIFICANCE_UNITS - 1

# Signature bytes: a number token is the ASCII digit of its length (one of NUMBER); then these.
NUMBER = b"123456789"
HINT, SEPARATOR, BOS, EQ, TASK, OTHER = b"hsB=To"
_NUMBER_SPAN = re.compile(rb"[1-9hs]+")

# Per written part of a number: (reversed, integer-like).
PartOrder = Sequence[tuple[bool, bool]]


def from_signature(signature: bytes, numbers_after: Mapping[int, PartOrder]) -> np.ndarray:
  """int32[2, T]: digit_index and significance of a sample with this signature.

  `numbers_after` maps the signature byte of a structural token (BOS, TASK, EQ) to the written
  parts of the number that follows it; spans after other tokens are not numbers of the task.
  """
  digit_index = [0] * len(signature)
  significance = [0] * len(signature)
  for match in _NUMBER_SPAN.finditer(signature):
    lo, hi = match.span()
    parts = numbers_after.get(signature[lo - 1]) if lo else None
    if parts is None:
      continue
    for w, part in enumerate(signature[lo:hi].split(b"s")):
      indices = [lo + j for j, c in enumerate(part) if c != HINT]
      lo += len(part) + 1
      for ordinal, i in enumerate(indices, 1):
        digit_index[i] = ordinal
      if w < len(parts):  # parts beyond the representation's get no significance
        lengths = [signature[i] - ord("0") for i in indices]
        for i, value in zip(indices, _significance(lengths, *parts[w])):
          significance[i] = min(max(value, 1), MAX_SIGNIFICANCE)
  return np.array((digit_index, significance), np.int32)


def _significance(lengths: list[int], reverse: bool, int_like: bool) -> list[int]:
  """Significance of the tokens of one part, given their digit counts in written order."""
  units, n = SIGNIFICANCE_UNITS, sum(lengths)
  ends = list(itertools.accumulate(lengths))  # digits written up to and including each token
  if int_like:
    if reverse:  # written from the units up: a token's lowest digit comes first
      return [units + e - l for e, l in zip(ends, lengths)]
    return [units + n - e for e in ends]
  if reverse:  # written from the last decimal back to the point: the highest digit comes last
    return [units - 1 - n + e for e in ends]
  return [units - 1 - e + l for e, l in zip(ends, lengths)]
