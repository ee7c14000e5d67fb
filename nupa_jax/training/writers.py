"""What a run writes as it goes: `train_metrics.jsonl`, TensorBoard events, a console line.

Only process 0 writes (the others get a writer whose methods do nothing), so a pod run
leaves one log. The JSONL file holds one JSON object per logged step, flushed line by line
so that a killed run loses at most the line being written; events (`{"event": "resume",
"step": N}`) are lines of their own. On resume the lines the killed run logged *after* the
restored checkpoint are dropped (its steps are recomputed, bit for bit, by the resumed run),
so every step appears once and the file reads as one uninterrupted run plus resume events.
A rerun that finds no checkpoint drops every step the same way and marks it with a `restart`
event; a run stopped by a signal ends with a `stop` event (training/stopping.py).
TensorBoard files use tensorboardX (no TensorFlow); clu's writers would import TensorFlow.
In a `gs://` workdir both files go through `paths.AppendedFile`: the log's object is rewritten
at each line, the event file's whenever tensorboardX flushes (every two minutes, and at the end).
"""
from __future__ import annotations

import json
import math
import os
import sys
import time

from nupa_jax import paths

METRICS_FILE = "train_metrics.jsonl"


class _EventFiles:
  """tensorboardX's writer factory for `gs://` event files: through the project's path library
  (tensorboardX's own would need google-cloud-storage and its credentials)."""

  def open(self, location: str) -> paths.AppendedFile:
    return paths.AppendedFile(location)

  def directory_check(self, location: str) -> None:
    del location  # buckets have no directories to create


# Modules tensorboardX imports when they are installed, for features no run uses: torch, to
# accept torch tensors (seconds of every run's start-up); google-cloud-storage, for its own
# `gs://` writer, which `MetricWriter` replaces with `_EventFiles` (half a second).
_UNUSED_BY_TENSORBOARDX = ("torch", "google.cloud.storage")


def _tensorboardx():
  """tensorboardX's `SummaryWriter` and `record_writer`, imported without the modules it would
  import only for features no run uses (`_UNUSED_BY_TENSORBOARDX`).

  While `sys.modules[name]` is None, `import name` fails as if the module were absent, and
  tensorboardX falls back to NumPy and to the writer factories registered here. A module
  already imported is left as it is."""
  blocked = [name for name in _UNUSED_BY_TENSORBOARDX if name not in sys.modules]
  for name in blocked:
    sys.modules[name] = None
  try:
    import tensorboardX  # pylint: disable=g-import-not-at-top
    from tensorboardX import record_writer  # pylint: disable=g-import-not-at-top
  finally:
    for name in blocked:
      del sys.modules[name]
  return tensorboardX.SummaryWriter, record_writer


class MetricWriter:
  """JSONL + TensorBoard scalars for one workdir."""

  def __init__(self, workdir: str | os.PathLike, *, enabled: bool = True):
    self.enabled = enabled
    self.path = paths.path(workdir) / METRICS_FILE
    self._file = None
    self._tb = None
    if enabled:
      self._file = paths.AppendedFile(self.path)

  def _tensorboard(self):
    if self._tb is None:
      summary_writer, record_writer = _tensorboardx()
      record_writer.register_writer_factory("gs", _EventFiles())
      self._tb = summary_writer(os.fspath(self.path.parent / "tensorboard"))
    return self._tb

  def _line(self, record: dict) -> None:
    self._file.write(json.dumps(record) + "\n")
    self._file.flush()  # a killed run loses at most the line being written

  def truncate_after(self, step: int) -> bool:
    """Drops records (steps and events) beyond `step`, and a torn last line, left by a
    killed run; whether there were any (False in processes other than 0)."""
    if not self.enabled:
      return False
    self._file.close()
    kept = []
    # (an object is written at its first flush: a fresh remote log has none yet)
    lines = self.path.read_text().splitlines() if self.path.exists() else []
    for line in lines:
      try:
        record = json.loads(line)
      except json.JSONDecodeError:
        continue
      if record.get("step", 0) <= step:
        kept.append(line)
    self.path.write_text("".join(line + "\n" for line in kept))
    self._file = paths.AppendedFile(self.path)
    return len(kept) < len(lines)

  def write(self, record: dict) -> None:
    """One logged step: a JSONL line and a TensorBoard scalar per numeric field."""
    if not self.enabled:
      return
    self._line(record)
    tb = self._tensorboard()
    for key, value in record.items():
      if key != "step" and isinstance(value, (int, float)) and math.isfinite(value):
        tb.add_scalar(f"train/{key}", value, record["step"])

  def event(self, name: str, **fields) -> None:
    if self.enabled:
      self._line({"event": name, **fields})

  def scalars(self, prefix: str, step: int, values: dict[str, float]) -> None:
    """Extra TensorBoard scalars (validation loss, eval buckets)."""
    if not self.enabled:
      return
    tb = self._tensorboard()
    for key, value in values.items():
      if value is not None and math.isfinite(value):
        tb.add_scalar(f"{prefix}/{key}", value, step)

  def close(self) -> None:
    if self._file is not None:
      self._file.close()
    if self._tb is not None:
      self._tb.close()


def _duration(seconds: float) -> str:
  seconds = int(max(seconds, 0))
  h, rest = divmod(seconds, 3600)
  m, s = divmod(rest, 60)
  return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
  """A console line per logged step with throughput and ETA (process 0 only)."""

  def __init__(self, total_steps: int, *, enabled: bool = True, stream=None):
    self.total = total_steps
    self.enabled = enabled
    self.stream = stream or sys.stdout
    self.start = time.time()

  def print(self, message: str) -> None:
    if self.enabled:
      print(message, file=self.stream, flush=True)

  def log(self, record: dict, steps_per_s: float) -> None:
    step = record["step"]
    eta = (self.total - step) / steps_per_s if steps_per_s > 0 else float("nan")
    width = len(str(self.total))
    self.print(
        f"step {step:>{width}}/{self.total}  loss {record['loss']:.4f}  "
        f"lr {record['learning_rate']:.2e}  |g| {record['grad_norm']:.3f}  "
        f"{record['samples_per_s']:,.0f} samples/s  {record['tokens_per_s']:,.0f} tok/s  "
        f"data wait {record['data_wait_fraction']:.0%}  "
        + (f"peak mem {record['peak_memory_gib']:.1f} GiB  " if "peak_memory_gib" in record
           else "")
        + f"seen {record['samples_seen']:,}  elapsed {_duration(time.time() - self.start)}  "
        f"eta {_duration(eta) if math.isfinite(eta) else '?'}")
