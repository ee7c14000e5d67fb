"""The position ids an evaluation gives each question's tokens: a registry of rules.

"consecutive" (the default) gives 0, 1, 2, ...: the paper's evaluation, and the official
code's, which turns randomized positions off when it evaluates. "training" is a diagnostic for
a PE trained on randomized positions (`random_positions=M`: each training sample's ids a
uniformly random sorted subset of [0, M)): each row's ids are drawn the same way, for a sample
as long as the row's prompt plus the batch's generation budget. Scoring one checkpoint both
ways tells a model that has not learned the task from one that has learned it only on the
spread-out ids it was trained on.

A rule maps (prompt lengths, generation budget, ids per row, the PE's M, a seed) to
int32[rows, ids per row], or None for generate's own 0, 1, 2, .... Draws are made on the host
with numpy, independently of the training sampler (`models.posenc.sampling`), from a seed
fixed per batch, so that an evaluation repeats exactly.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Rule = Callable[[np.ndarray, int, int, int, Sequence[int]], np.ndarray | None]


def consecutive(lengths, max_new_tokens, width, max_position, seed) -> None:
  """0, 1, 2, ...: generate's default."""
  del lengths, max_new_tokens, width, max_position, seed
  return None


def as_in_training(lengths: np.ndarray, max_new_tokens: int, width: int, max_position: int,
                   seed: Sequence[int]) -> np.ndarray:
  """int32[rows, width]: row i's first n_i = lengths[i] + max_new_tokens ids (at most M) are a
  uniformly random sorted n_i-subset of [0, M); ids past them (never read) are M - 1."""
  rng = np.random.default_rng(list(seed))
  out = np.full((len(lengths), width), max_position - 1, np.int32)
  for row, length in enumerate(np.asarray(lengths)):
    size = min(int(length) + max_new_tokens, max_position, width)
    out[row, :size] = np.sort(rng.choice(max_position, size, replace=False))
  return out


RULES: dict[str, Rule] = {"consecutive": consecutive, "training": as_in_training}
# Rules that need the PE's training range M (`random_positions`).
NEEDS_RANDOM_POSITIONS = frozenset({"training"})


def check(name: str) -> None:
  """ValueError naming the choices when `name` is not a rule."""
  if name not in RULES:
    raise ValueError(f"config.eval.positions={name!r}: expected one of {sorted(RULES)}")
