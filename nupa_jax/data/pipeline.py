"""The training and validation pipelines: config -> grain -> global jax.Array batches.

`Pipeline(config)` resolves everything that is fixed for a run once (mixture, test-set hashes,
encoder, row length); its iterators are a grain `MapDataset` over global batch indices mapped
by a `Batcher` for this process's rows, spread over grain worker processes (by default as
many as this process's devices need: data/workers.py), then turned into one global array per
field (`jax.device_put` in one process, `jax.make_array_from_process_local_data` across
several), by default on a background thread a few batches ahead of the training step.
The iterator's state is the index of the next global batch: the same integer in every process,
enough to resume (with any number of processes) exactly where a run stopped.
"""
from __future__ import annotations

import atexit
import functools
import pickle
import queue
import threading
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

import grain
import jax
import ml_collections
from absl import flags
from absl import logging

from nupa_jax import runmode
from nupa_jax import sharding as sharding_lib
from nupa_jax.data import batches
from nupa_jax.data import exclusion
from nupa_jax.data import packing
from nupa_jax.data import settings as settings_lib
from nupa_jax.data import source as source_lib
from nupa_jax.data import stream as stream_lib
from nupa_jax.data import workers as workers_lib
from nupa_jax.text import SampleEncoder

SPLITS = {"train": stream_lib.TRAIN, "validation": stream_lib.VALIDATION}
_PREFETCH = 4  # batches each producer (this process or a grain worker) keeps ready
_ENDLESS = 2**62  # batch indices of a training iterator (grain datasets have a length)
_JOIN_SECONDS = 10  # how long close() waits for a prefetch thread inside grain's next()
_LATE_SECONDS = 2.0  # a batch this late has its iterator's check called, and again as often


def encoder_from_config(config: ml_collections.ConfigDict) -> SampleEncoder:
  """The encoder of the config's text mode (`runmode.text_mode`): digit text by default,
  RF-CoT traces or a pretrained checkpoint's prompts where those packages are imported."""
  return runmode.text_mode(config).encoder(config)


def run_config(config: ml_collections.ConfigDict
               ) -> tuple[ml_collections.ConfigDict, SampleEncoder]:
  """`config` as a run trains on it, with its text mode's data fields filled in
  (`TextMode.configure`: RF-CoT's padded rows and cut lengths), and that mode's encoder: what
  `Pipeline(*run_config(config))` builds a run's batches from."""
  text = runmode.text_mode(config)
  encoder = text.encoder(config)
  return text.configure(config, encoder), encoder


class _Prefetch:
  """`produce()` called on a daemon thread, up to `depth` results ahead of `next()`; with
  `depth` 0 only once `next()` asks, so nothing is made ahead (the thread then only lets a
  late result be checked).

  The producer's exceptions (StopIteration included) reach the consumer in order; `close()`
  stops the thread at its next result. `check()`, if given, is called whenever a result is
  `_LATE_SECONDS` late: its error ends the iterator as the producer's would, and marks the
  thread `stuck` (waiting for something that will not come), which `close()` then leaves to
  end with the process instead of waiting for it. A thread still making a result
  `_JOIN_SECONDS` after `close()` is marked `stuck` too.
  """

  def __init__(self, produce: Callable[[], Any], depth: int,
               check: Callable[[], None] | None = None):
    self._queue: queue.Queue = queue.Queue(maxsize=max(depth, 1))
    self._asked = threading.Semaphore(0) if depth == 0 else None
    self._closed = threading.Event()
    self._error: BaseException | None = None
    self._check = check
    self.stuck = False
    self._thread = threading.Thread(target=self._run, args=(produce,), daemon=True,
                                    name="device-prefetch")
    self._thread.start()
    _LIVE.add(self)

  def _run(self, produce: Callable[[], Any]) -> None:
    while self._wait_until_asked():
      try:
        item = (produce(), None)
      except BaseException as e:  # pylint: disable=broad-except  (handed to the consumer)
        item = (None, e)
      while not self._closed.is_set():
        try:
          self._queue.put(item, timeout=0.1)
          break
        except queue.Full:
          continue
      if item[1] is not None:
        return

  def _wait_until_asked(self) -> bool:
    """Whether to make the next result: at once when reading ahead, else once `next()` asks
    (or `close()` wakes the thread); False once closed."""
    if self._asked is not None and not self._closed.is_set():
      self._asked.acquire()
    return not self._closed.is_set()

  def next(self) -> Any:
    if self._closed.is_set():  # the thread has ended: nothing would come
      raise RuntimeError("next() on a closed batch iterator")
    if self._error is not None:  # the producer has stopped: StopIteration or its failure
      raise self._error
    if self._asked is not None:
      self._asked.release()
    value, self._error = self._get()
    if self._error is not None:
      raise self._error
    return value

  def _get(self) -> tuple[Any, BaseException | None]:
    """The producer's next (value, error), or (None, the check's error) once it fails."""
    if self._check is None:
      return self._queue.get()
    while True:
      try:
        return self._queue.get(timeout=_LATE_SECONDS)
      except queue.Empty:
        pass
      try:
        self._check()
      except Exception as e:  # pylint: disable=broad-except  (handed to the consumer)
        self.stuck = True
        return None, e

  def close(self) -> None:
    self._closed.set()
    if self._asked is not None:
      self._asked.release()
    if not self.stuck:
      self._thread.join(timeout=_JOIN_SECONDS)
      # Still inside grain's next() (its workers slow to start): closing grain under it would
      # fail the same way as after a failed check, so it is left to end with the process.
      self.stuck = self._thread.is_alive()


def _checked_fields(fields: Collection[str] | None) -> frozenset[str] | None:
  """`fields` as a set, None for all; a name that is not a batch field is refused."""
  if fields is None:
    return None
  unknown = sorted(set(fields) - set(packing.FIELDS))
  if unknown:
    raise ValueError(f"unknown batch fields {unknown}; known: {', '.join(packing.FIELDS)}")
  return frozenset(fields)


def _selected(item: tuple[dict, dict], fields: frozenset[str] | None) -> tuple[dict, dict]:
  """A grain item (arrays, stats) with only `fields` of its arrays (None: all)."""
  arrays, stats = item
  if fields is None:
    return arrays, stats
  return {name: value for name, value in arrays.items() if name in fields}, stats


# Prefetch threads not yet closed: stopped at exit, before the interpreter tears down, so that
# a script that never closes its iterator does not end with a daemon thread inside a
# transfer (an abort, not a clean exit).
_LIVE: weakref.WeakSet[_Prefetch] = weakref.WeakSet()


@atexit.register
def _close_live_prefetchers() -> None:
  for prefetch in list(_LIVE):
    prefetch.close()


def _placed(arrays: dict, stats: dict, sharding: jax.sharding.Sharding | None,
            global_shape: tuple[int, int]) -> tuple[dict, dict]:
  """A host batch as global arrays on the devices (one batched transfer in one process)."""
  if sharding is None:
    return arrays, stats
  if jax.process_count() == 1:
    return jax.device_put(arrays, sharding), stats
  return {name: jax.make_array_from_process_local_data(
              sharding, value, (global_shape[0], *value.shape[1:-1], global_shape[1]))
          for name, value in arrays.items()}, stats


class BatchIterator(Iterator[dict[str, Any]]):
  """Batches of one split from a start index; `state()` is the next global batch index.

  With a sharding and `device_prefetch` > 0, a background thread takes batches from grain and
  places them on the devices up to `device_prefetch` batches ahead of the training loop: the
  copy out of grain's workers and the host-to-device transfers then overlap the step instead
  of stalling the loop between steps. The batches and their order are the same either way;
  `state()` counts the batches handed out, not those prefetched. That thread also lets a late
  batch end in an error instead of a hang: `check`, if given, is called whenever the next
  batch is `_LATE_SECONDS` late, and what it raises, `next()` raises. An iterator with a
  `check` and no read-ahead (no sharding, or `device_prefetch` 0) still makes its batches on
  such a thread, one when asked, so that a late batch is checked there too.
  """

  def __init__(self, dataset: grain.IterDataset, start: int, stop: int,
               sharding: jax.sharding.Sharding | None, global_shape: tuple[int, int],
               num_samples: int, device_prefetch: int = 0,
               fields: Collection[str] | None = None, stacked: bool = False,
               check: Callable[[], None] | None = None):
    fields = _checked_fields(fields)
    self._iterator = grain_iterator = iter(dataset)
    self._next, self._stop = start, stop
    self._num_samples = num_samples
    self._stats: dict[str, int] = {}
    # The next batch's fields, placed: the closure holds the grain iterator, not this object,
    # so that an iterator nobody closes is still collected (and its prefetch thread and
    # workers stopped) when dropped.
    def produce():
      arrays, stats = _selected(next(grain_iterator), fields)
      return _placed(packing.stack_fields(arrays) if stacked else arrays, stats, sharding,
                     global_shape)

    self._produce = produce
    ahead = device_prefetch if sharding is not None else 0
    self._prefetch = None
    if ahead > 0 or check is not None:
      self._prefetch = _Prefetch(self._produce, ahead, check)

  def __next__(self) -> dict[str, Any]:
    if self._next >= self._stop:
      raise StopIteration
    if self._prefetch is not None:
      arrays, stats = self._prefetch.next()
    else:
      arrays, stats = self._produce()
    self._next += 1
    batches.add_stats(self._stats, stats)
    return {**arrays, "num_samples": self._num_samples}

  def state(self) -> int:
    """The index of the next global batch: save it, pass it back as `start_step`."""
    return self._next

  def stats(self) -> dict[str, float]:
    """This process's counts over the batches given so far: samples, test-set redraws,
    overflow redraws, tokens, positions, and `padding_fraction`."""
    return batches.with_padding({name: self._stats.get(name, 0) for name in batches.STATS})

  def close(self) -> None:
    """Stops the prefetch thread and grain's worker processes (also done when the iterator is
    collected). After a failed check, or with the thread still inside grain's next(), grain is
    left alone: its close() would wait for threads blocked on workers that died, or fail
    under the thread, and the process's exit ends the workers still alive."""
    if self._prefetch is not None:
      self._prefetch.close()
      if self._prefetch.stuck:
        return
    close = getattr(self._iterator, "close", None)
    if close is not None:
      close()

  def __del__(self):
    if getattr(self, "_prefetch", None) is not None:
      self._prefetch.close()

  def __enter__(self) -> BatchIterator:
    return self

  def __exit__(self, exc_type, error, traceback) -> None:
    try:
      self.close()
    except Exception:  # pylint: disable=broad-except
      if error is None:
        raise
      # The block's error says what went wrong. A close that fails under it (grain closing
      # the workers whose start that error cut short) is logged, not raised in its place.
      logging.warning("closing the batch iterator after %r failed too", error, exc_info=True)


class Pipeline:
  """A run's data: `train_iterator`, `val_iterator`, and the shapes the model sees."""

  def __init__(self, config: ml_collections.ConfigDict, encoder: SampleEncoder | None = None):
    self.settings = s = settings_lib.Settings.from_config(config)
    self.encoder = encoder or encoder_from_config(config)
    self.mixture = s.mixture
    self.num_workers = workers_lib.resolve(s.num_workers)
    cells, hashes = frozenset(), exclusion.QuestionKeys()
    if s.exclude_test:
      cells = exclusion.test_cells(s.mixture.task_lengths())
      hashes, exhausted = exclusion.test_hashes(cells, s.test_seed, s.test_per_length,
                                                processes=self.num_workers)
      if exhausted:
        logging.warning("not training on %s: the frozen test set holds (nearly) all their "
                        "questions", ", ".join(f"{t}@{n}" for t, n in sorted(exhausted)))
        self.mixture = s.mixture.without(exhausted)
    means, longest = source_lib.cell_positions(self.mixture, self.encoder)
    k = s.samples_per_row
    mean_row = k * float(means @ self.mixture.probs)
    self.mixture = self.mixture.sorted_by(means)
    self.source = source_lib.Source(self.mixture, self.encoder, hashes, cells)
    self.seq_len = s.seq_len or batches.auto_seq_len(
        batches.probe_rows(self.source, self.stream("train"), k), k, longest)
    if longest > self.seq_len or mean_row > self.seq_len:
      raise ValueError(f"rows of {k} samples take {mean_row:.0f} positions on average, samples "
                       f"up to {longest}: raise config.data.seq_len={self.seq_len} (0 sizes it "
                       f"automatically) or lower config.data.samples_per_row")
    if s.longest_sample and longest > s.longest_sample:
      raise batches.long_sample(longest, s.longest_sample)
    self.expected_padding = 1 - mean_row / self.seq_len
    # Each batcher gets its own copy: the encoder fills caches as it works, so a source in
    # use by one iterator's prefetch thread must not be shared with (or pickled for the
    # workers of) another.
    self._frozen_source = pickle.dumps(self.source)

  @property
  def rows(self) -> int:
    """Rows of a global batch."""
    return self.settings.rows

  @property
  def batch_size(self) -> int:
    """Samples of a global batch."""
    return self.settings.batch_size

  def stream(self, split: str) -> stream_lib.Stream:
    if split not in SPLITS:
      raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    s = self.settings
    return stream_lib.Stream(self.mixture, s.batch_size, s.seed, SPLITS[split],
                             s.pool_size if split == "train" else None)

  def batcher(self, split: str, rows: range | None = None) -> batches.Batcher:
    """The numpy batch maker of `split` for global `rows` (default all)."""
    rows = range(self.rows) if rows is None else rows
    return batches.Batcher(pickle.loads(self._frozen_source), self.stream(split),
                           self.settings.samples_per_row, self.seq_len, rows,
                           self.settings.loss_on_padding, self.settings.longest_sample)

  def local_rows(self, sharding: jax.sharding.Sharding | None = None,
                 process_index: int | None = None, process_count: int | None = None) -> range:
    """The global rows this process builds: those its devices hold under `sharding`, else
    block `process_index` of `process_count` equal blocks."""
    if sharding is not None:
      try:
        index_map = sharding.addressable_devices_indices_map((self.rows, self.seq_len))
      except ValueError as e:
        raise ValueError(f"{self.rows} rows per batch (batch size {self.batch_size} / "
                         f"samples_per_row {self.settings.samples_per_row}) do not split over "
                         f"the batch axes of {sharding}; change config.data.samples_per_row "
                         f"or the batch size") from e
      spans = {(idx[0].start or 0, self.rows if idx[0].stop is None else idx[0].stop)
               for idx in index_map.values()}
      lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
      if sum(b - a for a, b in spans) != hi - lo:
        raise ValueError(f"this process's devices hold rows {sorted(spans)} of the batch, not "
                         "one block; build the mesh with each process's devices adjacent on "
                         "the batch axes (jax.make_mesh does)")
      return range(lo, hi)
    index = jax.process_index() if process_index is None else process_index
    count = jax.process_count() if process_count is None else process_count
    if self.rows % count:
      raise ValueError(f"{self.rows} rows per batch do not split over {count} processes; "
                       "change config.data.samples_per_row or the batch size")
    per = self.rows // count
    return range(index * per, (index + 1) * per)

  def dataset(self, split: str, start: int, stop: int, rows: range,
              num_workers: int) -> grain.IterDataset:
    """Global batches [start, stop) of `split` restricted to `rows`, as (arrays, stats), made
    by `num_workers` grain worker processes (0: in this process)."""
    dataset = grain.MapDataset.range(start, stop).map(self.batcher(split, rows))
    # Generating a batch is Python-bound: more threads than one only fight for the GIL.
    dataset = dataset.to_iter_dataset(grain.ReadOptions(num_threads=1,
                                                        prefetch_buffer_size=_PREFETCH))
    if num_workers:
      if not flags.FLAGS.is_parsed():  # grain's workers read absl flags (docs/stack_notes.md)
        flags.FLAGS.mark_as_parsed()
      dataset = dataset.mp_prefetch(grain.MultiprocessingOptions(num_workers=num_workers))
    return dataset

  def _iterator(self, split: str, start: int, stop: int, sharding, process_index,
                process_count, num_workers, fields, stacked, per_call=1) -> BatchIterator:
    if isinstance(sharding, jax.sharding.Mesh):
      sharding = sharding_lib.batch_sharding(sharding)
    rows = self.local_rows(sharding, process_index, process_count)
    workers = self.num_workers if num_workers is None else num_workers
    dataset = self.dataset(split, start, stop, rows, workers)
    samples = self.batch_size if sharding is not None else len(rows) * self.settings.samples_per_row
    check = None
    if workers:  # grain misses a worker dead at start; children already dead are not its
      check = functools.partial(workers_lib.check_workers, set(workers_lib.dead_children()))
    return BatchIterator(dataset, start, stop, sharding, (self.rows, self.seq_len), samples,
                         self.settings.device_prefetch * per_call, fields, stacked, check)

  def train_iterator(self, sharding: jax.sharding.Sharding | jax.sharding.Mesh | None = None,
                     start_step: int = 0, *, process_index: int | None = None,
                     process_count: int | None = None,
                     num_workers: int | None = None,
                     fields: Collection[str] | None = None,
                     stacked: bool = False, per_call: int = 1) -> BatchIterator:
    """Endless training batches from global batch `start_step`.

    With a sharding (or a mesh: its batch axes), batches are dicts of global jax.Arrays
    [rows, seq_len] and `num_samples` = the batch size. Without, they are this process's
    rows as numpy arrays (`process_index` of `process_count` blocks; default jax's) and
    `num_samples` counts those rows' samples. `fields`: the array fields given (default all
    of `packing.FIELDS`); each one placed costs a host-to-device transfer per device and
    step, which a multi-GPU step of a small model notices, so the trainer asks only for what
    its model reads (`training.step.fields_read`). `stacked`: the fields come as one array
    under `packing.STACKED` ([rows, fields, seq_len], `packing.stack_fields`), one transfer
    per device instead of one per field (`config.data.stacked_transfer`); the step takes them
    apart (`packing.unstack_fields`). `per_call`: batches the loop takes at a time (one call
    of several steps, `config.train.steps_per_call`); the read-ahead, `device_prefetch`
    batches for one step a call, is that many calls' batches, so that the loop finds the
    next call's batches placed while the devices run the last call.
    """
    return self._iterator("train", start_step, _ENDLESS, sharding, process_index,
                          process_count, num_workers, fields, stacked, per_call)

  def val_iterator(self, num_batches: int, sharding=None, *, process_index: int | None = None,
                   process_count: int | None = None,
                   num_workers: int | None = None,
                   fields: Collection[str] | None = None,
                   stacked: bool = False) -> BatchIterator:
    """The first `num_batches` batches of the validation stream (the same ones every call);
    `fields` and `stacked` as for `train_iterator`."""
    return self._iterator("validation", 0, num_batches, sharding, process_index, process_count,
                          num_workers, fields, stacked)

  def samples(self, split: str, start: int, count: int) -> list[source_lib.Sample]:
    """Questions of a stream by index, as drawn (before any packing replacement): e.g. the
    validation questions an evaluator generates answers for."""
    stream = self.stream(split)
    return [self.source.sample(d) for d in stream.draws(start, start + count)]


def make_train_iterator(config: ml_collections.ConfigDict,
                        sharding: jax.sharding.Sharding | jax.sharding.Mesh | None = None,
                        start_step: int = 0, *, encoder: SampleEncoder | None = None,
                        **kwargs: Any) -> BatchIterator:
  """`Pipeline(config, encoder).train_iterator(sharding, start_step, **kwargs)`."""
  return Pipeline(config, encoder).train_iterator(sharding, start_step, **kwargs)


def describe(pipeline: Pipeline) -> Mapping[str, Any]:
  """The facts about a pipeline worth logging once at the start of a run."""
  s = pipeline.settings
  return {"batch_size": s.batch_size, "rows": pipeline.rows, "seq_len": pipeline.seq_len,
          "samples_per_row": s.samples_per_row, "packing": s.packing,
          "loss_on_padding": s.loss_on_padding,
          "cells": len(pipeline.mixture), "expected_padding": round(pipeline.expected_padding, 4),
          "pool_size": s.pool_size, "num_workers": pipeline.num_workers}
