"""Laying examples into fixed-shape rows: packed (k samples a row) or padded (one a row).

A row of `seq_len` positions holds whole samples one after another, never a sample split over
two rows. A sample of n tokens takes n - 1 positions: its inputs are tokens[:-1], its targets
tokens[1:] (EOS is only ever a target), so the model learns every next token inside a segment
and nothing across segments. Each segment restarts `positions` at 0 and carries its id
(1, 2, ... within the row; 0 marks padding) for the attention mask; `loss_mask` is the sample's
answer mask moved onto the targets. Every row has the same number of samples (the batch size
counts samples exactly, as the paper's does); rows are sized so that they nearly always fit,
and a sample that does not fit what is left of its row is replaced by a fresh draw
(`fill_row`), counted as an overflow redraw.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from nupa_jax.data.source import Example

FIELDS = ("inputs", "targets", "loss_mask", "segment_ids", "positions", "digit_index",
          "significance")
# Draws of one slot before a row is declared impossible to fill.
MAX_OVERFLOW_REDRAWS = 100


def fill_row(examples: Sequence[Example], seq_len: int,
             replace: Callable[[int, int], Example]) -> tuple[list[Example], int]:
  """The row's examples with overflowing ones replaced, and the number of replacements.

  `replace(slot, attempt)` gives the attempt-th substitute (attempt >= 1) for `slot`; slots are
  filled in order and each replacement must fit what the earlier slots left.
  """
  out, used, replaced = [], 0, 0
  for slot, example in enumerate(examples):
    attempt = 0
    while used + example.slots > seq_len:
      attempt += 1
      if attempt > MAX_OVERFLOW_REDRAWS:
        raise ValueError(
            f"no sample of the mixture fits the {seq_len - used} positions left in a row after "
            f"{slot} samples ({MAX_OVERFLOW_REDRAWS} draws); raise config.data.seq_len (0 sizes "
            f"it automatically) or lower config.data.samples_per_row")
      example = replace(slot, attempt)
    replaced += attempt
    used += example.slots
    out.append(example)
  return out, replaced


def pack(rows: Sequence[Sequence[Example]], seq_len: int, pad_id: int) -> dict[str, np.ndarray]:
  """Arrays [len(rows), seq_len] of the batch layout (docs/interfaces.md); rows must fit."""
  shape = (len(rows), seq_len)
  out = {name: np.zeros(shape, np.int32) for name in FIELDS}
  out["inputs"][:] = pad_id
  out["targets"][:] = pad_id
  out["loss_mask"] = np.zeros(shape, np.bool_)
  for r, row in enumerate(rows):
    start = 0
    for segment, example in enumerate(row, start=1):
      n, end = example.slots, start + example.slots
      if end > seq_len:
        raise ValueError(f"row {r} needs more than seq_len={seq_len} positions; fill_row first")
      tokens = example.tokens
      out["inputs"][r, start:end] = tokens[:-1]
      out["targets"][r, start:end] = tokens[1:]
      out["loss_mask"][r, start:end] = example.loss_mask[1:]
      out["segment_ids"][r, start:end] = segment
      out["positions"][r, start:end] = np.arange(n)
      out["digit_index"][r, start:end] = example.digit_index[:-1]
      out["significance"][r, start:end] = example.significance[:-1]
      start = end
  return out

