"""A process's share of global batch s, as numpy rows; and sizing rows from a probe.

Global batch s holds samples [s B, (s + 1) B) of the stream; global row r holds the k
consecutive samples starting at s B + r k. A row depends on nothing but (config, s, r), so a
process builds exactly the rows it holds, and the global batch is the same whatever the number
of processes (or grain workers) that build it. `Batcher` is what grain maps over batch
indices, in this process or in grain's workers.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from nupa_jax.data import packing
from nupa_jax.data import source as source_lib
from nupa_jax.data import stream as stream_lib

STATS = ("samples", "test_redraws", "overflow_redraws", "tokens", "positions")
PROBE_SAMPLES = 4096  # samples (whole batches, at least one) that size rows when seq_len = 0
_ROUND = 8  # auto seq_len is a multiple of this
_TAIL_STDS = 4.0  # packed rows: auto seq_len covers the row mean + this many deviations


@dataclasses.dataclass(frozen=True)
class Batcher:
  """Global batch index -> (arrays [len(rows), seq_len], stats) of the given global rows."""
  source: source_lib.Source
  stream: stream_lib.Stream
  samples_per_row: int
  seq_len: int
  rows: range  # the global rows this process holds
  loss_on_padding: bool = False  # packing.pack's option (padded rows only)
  longest_sample: int = 0  # the most positions a sample may take (Settings.longest_sample)

  def _start(self, step: int, row: int) -> int:
    return step * self.stream.batch_size + row * self.samples_per_row

  def row_examples(self, step: int, row: int) -> list[source_lib.Example]:
    """The examples of one global row as drawn, before packing replaces any."""
    start = self._start(step, row)
    return [self.source.example(d) for d in self.stream.draws(start, start + self.samples_per_row)]

  def __call__(self, step: int) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    rows, replaced = [], 0
    for row in self.rows:
      start = self._start(step, row)

      def replace(slot: int, attempt: int, start=start) -> source_lib.Example:
        return self.source.example(self.stream.replacement(start + slot, attempt))

      examples, n = packing.fill_row(self.row_examples(step, row), self.seq_len, replace)
      rows.append(examples)
      replaced += n
    if self.longest_sample:
      longest = max(e.slots for row in rows for e in row)
      if longest > self.longest_sample:
        raise long_sample(longest, self.longest_sample, step)
    arrays = packing.pack(rows, self.seq_len, self.source.encoder.pad_id,
                          loss_on_padding=self.loss_on_padding)
    stats = {
        "samples": len(self.rows) * self.samples_per_row,
        "test_redraws": sum(e.sample.test_redraws for row in rows for e in row),
        "overflow_redraws": replaced,
        "tokens": sum(e.slots for row in rows for e in row),  # sample positions only
        "positions": arrays["segment_ids"].size,
    }
    return arrays, stats


class LongSampleError(ValueError):
  """A sample longer than the model's attention span holds (`long_sample`)."""


def long_sample(positions: int, span: int, step: int | None = None) -> LongSampleError:
  """The error of a sample of `positions` over the span, found by the stream's probe (step
  None) or in batch `step`. The message is its only argument, so that it pickles back from a
  grain worker."""
  where = "the stream's probe" if step is None else f"batch {step}"
  return LongSampleError(f"a sample of {positions} positions in {where} is longer than "
                         f"config.model.attention_span={span}, the most the model's attention "
                         f"holds: set it to at least {positions}, or 0 to attend over whole rows")


def probe_rows(source: source_lib.Source, stream: stream_lib.Stream,
               samples_per_row: int) -> np.ndarray:
  """Positions taken by each row of the first batches (>= PROBE_SAMPLES samples)."""
  batches = -(-PROBE_SAMPLES // stream.batch_size)
  rows = stream.batch_size // samples_per_row
  batcher = Batcher(source, stream, samples_per_row, 0, range(rows))
  examples = [batcher.row_examples(s, r) for s in range(batches) for r in range(rows)]
  return np.array([sum(e.slots for e in row) for row in examples])


def auto_seq_len(row_positions: Sequence[int], samples_per_row: int, longest: int = 0) -> int:
  """Row length for the probed rows: their longest (padded rows), or the mean plus
  `_TAIL_STDS` deviations when that is longer (packed rows: a sum of k lengths, whose tail the
  probe sees too rarely); at least `longest`; a multiple of 8."""
  used = np.asarray(row_positions, dtype=np.float64)
  need = max(used.max(), longest)
  if samples_per_row > 1:
    need = max(need, used.mean() + _TAIL_STDS * used.std())
  return int(-(-int(np.ceil(need)) // _ROUND) * _ROUND)


def add_stats(total: dict[str, int], stats: dict[str, int]) -> None:
  for name in STATS:
    total[name] = total.get(name, 0) + stats[name]


def with_padding(counts: dict[str, float]) -> dict[str, float]:
  """`counts` (of `STATS`, over some batches) and the share of their positions that is
  padding, `padding_fraction`."""
  padding = 1 - counts["tokens"] / counts["positions"] if counts["positions"] else 0.0
  return {**counts, "padding_fraction": padding}
