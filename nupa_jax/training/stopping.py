"""Stopping a training run cleanly: SIGTERM, SIGINT or a preemption notice -> a checkpoint.

A scheduler's time limit, a preempted spot VM (`SIGTERM`) or Ctrl-C (`SIGINT`) should cost
no training: the run stops at a step boundary, saves a checkpoint there (data position
included) and exits with the shell's status for the signal (143 / 130), so rerunning the same
command resumes exactly where it stopped. A signal handler only records the request; the
training loop asks `reached(calls)` after each call of its step and stops when it says so.

Several processes must stop at the same step (the checkpoint is one collective save). They
agree through JAX's preemption service, which `jax.distributed.initialize` starts: its
notifier catches SIGTERM in any process (the preemption notice of a Cloud TPU VM, SLURM's
`scancel`, `timeout`), tells the others through the coordination service, and
`multihost_utils.reached_preemption_sync_point(count)` turns true on every process at the same
count of step calls (one past the furthest any process had reached). It costs no collective
per step. SIGINT is handed to the same protocol: its handler records the signal and raises
SIGTERM in its own process. A single process has nothing to agree on and stops at the end of
the step call in progress (one step, or `train.steps_per_call` of them).

A second signal while the first is being handled (a long evaluation or save in progress) ends
the process at once, as the signal's default action would; the last committed checkpoint stays
the resume point.
"""
from __future__ import annotations

import os
import signal

import jax
from absl import logging
from jax.experimental import multihost_utils

EXIT_STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143}  # 128 + signal number, as shells do
# The cause where this process saw no signal of its own: in a multi-process run SIGTERM goes
# to the preemption notifier, which does not say whether it came here or to another process.
PREEMPTION = "SIGTERM / a preemption notice"


def _preemption_service() -> bool:
  """Whether JAX's preemption sync manager runs (multi-process runs, unless disabled by
  `jax_enable_preemption_service=False`)."""
  from jax._src import distributed  # pylint: disable=g-import-not-at-top
  return distributed.global_state.preemption_sync_manager is not None


class StopRequests:
  """Records SIGTERM / SIGINT while installed (a context manager); `reached(calls)` says when
  to stop. `signal` is the signal this process received (None if it received none)."""

  def __init__(self):
    self.signal: int | None = None
    self._multiprocess = jax.process_count() > 1
    self._previous: dict[int, object] = {}

  def _handled(self) -> tuple[int, ...]:
    if not self._multiprocess:
      return (signal.SIGTERM, signal.SIGINT)
    if not _preemption_service():
      logging.warning("JAX's preemption service is off (jax_enable_preemption_service): the "
                      "processes cannot agree on a step to stop at, so SIGTERM / SIGINT end "
                      "the run without a checkpoint")
      return ()
    return (signal.SIGINT,)  # SIGTERM is the preemption notifier's own

  def __enter__(self) -> StopRequests:
    for signum in self._handled():
      self._previous[signum] = signal.signal(signum, self._handle)
    return self

  def __exit__(self, *exc) -> None:
    for signum, previous in self._previous.items():
      signal.signal(signum, previous)
    self._previous = {}

  def _handle(self, signum: int, frame) -> None:
    del frame
    if self.signal is not None:  # the second signal: stop now, as its default action does
      signal.signal(signum, signal.SIG_DFL)
      os.kill(os.getpid(), signum)
      return
    self.signal = signum
    if self._multiprocess:  # SIGINT: raise the preemption notice the processes agree on
      os.kill(os.getpid(), signal.SIGTERM)

  def reached(self, calls: int) -> bool:
    """Whether to stop after `calls`, a count of the training loop's step calls that grows by
    one a call (every process gets the same answer for the same count; call it after every
    call, from the same count on every process: JAX's sync point is one count past the
    furthest any process had reached, so a count that skipped values could miss it)."""
    if self._multiprocess:
      return bool(self._previous) and multihost_utils.reached_preemption_sync_point(calls)
    return self.signal is not None

  @property
  def cause(self) -> str:
    """The signal's name (SIGINT, SIGTERM), or PREEMPTION."""
    return PREEMPTION if self.signal is None else signal.Signals(self.signal).name

  @property
  def exit_status(self) -> int:
    return EXIT_STATUS.get(self.signal, EXIT_STATUS[signal.SIGTERM])


class Stopped(Exception):
  """Training stopped on a signal after saving a checkpoint; `exit_status` is the process's
  exit status (143 / 130)."""

  def __init__(self, message: str, exit_status: int):
    super().__init__(message)
    self.exit_status = exit_status
