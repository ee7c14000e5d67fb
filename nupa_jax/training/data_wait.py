"""How long the training loop waits for its next batch: `data_wait_fraction` per log interval.

Steps are dispatched asynchronously, so a loop fed faster than the devices compute spends its
time blocked in dispatch (the device queue is full) and finds each next batch ready: its wait
is ~0. A loop whose batches come slower than the steps drain the queue waits in `next()`
while the devices idle. So a lasting wait above `WARN_ABOVE` of the interval's training time
says the data pipeline, not the model, sets the pace, and the run warns once, naming the fix.
The first interval is never held against the pipeline: it holds the compile and the grain
workers' start-up.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from absl import logging

WARN_ABOVE = 0.10  # share of an interval's training time spent waiting for batches
WARN_AFTER = 2  # consecutive intervals above it (the first interval of a run not counted)

T = TypeVar("T")


class DataWait:
  """Accumulates the time spent in `next(batches)`; `interval()` closes a log interval."""

  def __init__(self, *, clock: Callable[[], float] = time.perf_counter,
               warn: Callable[[str], None] = logging.warning):
    self._clock = clock
    self._warn = warn
    self._waited = 0.0  # seconds inside `next` since the last interval closed
    self._intervals = 0
    self._above: list[float] = []  # the latest run of fractions above WARN_ABOVE
    self.warned = False

  def next(self, batches: Iterator[T]) -> T:
    """`next(batches)`, timed."""
    start = self._clock()
    try:
      return next(batches)
    finally:
      self._waited += self._clock() - start

  def interval(self, elapsed: float) -> float:
    """Closes a log interval of `elapsed` training seconds (evaluation and checkpoint pauses
    left out): the share of it spent waiting for batches, in [0, 1]. Warns, once a run, when
    that share stays above WARN_ABOVE for WARN_AFTER intervals after the first."""
    fraction = min(max(self._waited / elapsed, 0.0), 1.0) if elapsed > 0 else 0.0
    self._waited = 0.0
    self._intervals += 1
    if self._intervals > 1:
      self._above = (self._above + [fraction])[-WARN_AFTER:] if fraction > WARN_ABOVE else []
    if len(self._above) >= WARN_AFTER and not self.warned:
      self.warned = True
      shares = ", ".join(f"{f:.0%}" for f in self._above)
      self._warn(f"the training loop waited for batches {shares} of the last {WARN_AFTER} log "
                 f"intervals (above {WARN_ABOVE:.0%}): the devices idle for want of data; "
                 f"raise config.data.num_workers where CPUs are free")
    return fraction
