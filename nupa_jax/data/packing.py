"""Laying examples into fixed-shape rows: packed (k samples a row) or padded (one a row).

A row of `seq_len` positions holds whole samples one after another, never a sample split over
two rows. A sample of n tokens takes n - 1 positions: its inputs are tokens[:-1], its targets
tokens[1:] (EOS is only ever a target), so the model learns every next token inside a segment
and nothing across segments. Each segment restarts `positions` at 0 and carries its id
(1, 2, ... within the row; 0 marks padding) for the attention mask; `loss_mask` is the sample's
answer mask moved onto the targets (`pack`'s `loss_on_padding` adds the official NUPA code's
padding targets). Every row has the same number of samples (the batch size counts samples
exactly, as the paper's does); rows are sized so that they nearly always fit, and in a row that
does not, the longest sample is replaced by a fresh draw until it fits (`fill_row`), each
replacement counted as an overflow redraw.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nupa_jax.data.source import Example

FIELDS = ("inputs", "targets", "loss_mask", "segment_ids", "positions", "digit_index",
          "significance")
# The batch key of a batch's fields placed as one array (`stack_fields`).
STACKED = "stacked"


def stacked_names(fields: Sequence[str]) -> tuple[str, ...]:
  """The order in which `fields` are stacked: that of FIELDS."""
  return tuple(name for name in FIELDS if name in fields)


def stack_fields(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
  """A batch's fields ([rows, seq_len], int32 and the boolean loss mask) as one int32 array
  [rows, fields, seq_len] in `stacked_names` order, under STACKED. Rows stay the leading axis,
  so the batch's row sharding places it as it places each field: one host-to-device transfer
  per device instead of one per field and device."""
  return {STACKED: np.stack([arrays[name] for name in stacked_names(arrays)], axis=1)}


def unstack_fields(stacked, names: Sequence[str]) -> dict:
  """The fields of a `stack_fields` array (numpy or jax, inside a jitted step too), given the
  names it was stacked from (`stacked_names`)."""
  return {name: stacked[:, i] for i, name in enumerate(names)}


# Redraws in one row before it is declared impossible to fill.
MAX_OVERFLOW_REDRAWS = 100


def fill_row(examples: Sequence[Example], seq_len: int,
             replace: Callable[[int, int], Example]) -> tuple[list[Example], int]:
  """The row's examples, made to fit `seq_len`, and the number of replacements.

  While the row is too long, its longest example (the first of equals) is replaced by
  `replace(slot, attempt)`, the attempt-th substitute (attempt >= 1) for that slot: replacing
  the longest shortens the row most, so a row that can fit at all soon does.
  """
  row = list(examples)
  attempts = [0] * len(row)
  replaced = 0
  while sum(e.slots for e in row) > seq_len:
    replaced += 1
    if replaced > MAX_OVERFLOW_REDRAWS:
      raise ValueError(
          f"{len(row)} samples still take {sum(e.slots for e in row)} > {seq_len} positions "
          f"after {MAX_OVERFLOW_REDRAWS} redraws; raise config.data.seq_len (0 sizes it "
          f"automatically) or lower config.data.samples_per_row")
    slot = max(range(len(row)), key=lambda i: row[i].slots)
    attempts[slot] += 1
    row[slot] = replace(slot, attempts[slot])
  return row, replaced


def pack(rows: Sequence[Sequence[Example]], seq_len: int, pad_id: int, *,
         loss_on_padding: bool = False) -> dict[str, np.ndarray]:
  """Arrays [len(rows), seq_len] of the batch layout (docs/interfaces.md); rows must fit.

  `loss_on_padding` (one sample a row) reproduces the labels of the official NUPA code, which
  right-pads a batch to its longest sample and leaves the padding in the labels: each row's
  sample goes on past its EOS up to the longest sample of `rows` (the inputs EOS, then pad;
  the targets pad; same segment, positions continuing, so these predictions see the sample
  as the official ones do), and those targets are in `loss_mask`.
  """
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
  if loss_on_padding:
    _continue_with_padding(out, rows)
  return out


def _continue_with_padding(out: dict[str, np.ndarray], rows: Sequence[Sequence[Example]]) -> None:
  """`pack`'s loss_on_padding: targets of padding after each row's sample, as described there."""
  if any(len(row) != 1 for row in rows):
    raise ValueError("loss_on_padding needs one sample a row (config.data.packing='padded')")
  longest = max((row[0].slots for row in rows), default=0)
  for r, (example,) in enumerate(rows):
    end = example.slots
    if end == longest:
      continue
    out["inputs"][r, end] = example.tokens[-1]  # EOS: in the official layout an input too
    out["segment_ids"][r, end:longest] = 1
    out["positions"][r, end:longest] = np.arange(end, longest)
    out["loss_mask"][r, end:longest] = True

