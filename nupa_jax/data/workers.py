"""How many grain worker processes make a run's batches: `config.data.num_workers`, with
`AUTO` (-1, the default) resolved from this process's devices and CPUs.

Generating a batch is Python-bound: the training process alone makes fewer samples a second
than one GPU's step consumes, so by default a run with accelerators spreads it over worker
processes. The rule:

    workers = 0                                              (no accelerator: a CPU run)
    workers = min(WORKERS_PER_ACCELERATOR * accelerators,    (enough for every local device)
                  cpus - RESERVED_CPUS)                      (no more than the CPUs left)

with `accelerators` the non-CPU devices of this process (`jax.local_devices()`) and `cpus` the
CPUs this process may run on (`os.sched_getaffinity`: a SLURM `--cpus-per-task` or `taskset`
share, not the whole machine). One CPU stays with the training process, which gathers the
batches, puts them on the devices and dispatches the steps. Six workers per device keep the
100m preset's step fed on one GPU (measurements in docs/benchmarks/README.md); more only wait.

A CPU-only run (tests, a laptop) trains on the same cores the workers would take, so it
generates in its own process. The rule counts per process: several processes on one host
(`launch/local.sh -n 4`) each take their share only when pinned to their own CPUs (`srun
--cpu-bind`, `taskset`); unpinned, set `config.data.num_workers` by hand.

A worker that dies once it runs is grain's to report, and grain does within seconds. One that
dies as it starts hangs the run instead: a spawned worker imports the main module again
(`nupa_jax.train`) before it reads its share of the pipeline, which grain's `Process.start()`
writes to it through a pipe; the pickled pipeline is more than a pipe holds (64 KiB), and the
parent keeps the pipe's reading end open while it writes (CPython gh-118981; Python 3.11 has
it), so a worker that dies in that import leaves `start()`, and every batch after it, blocked
for good. `check_workers` is the way out: the pipeline calls it while a batch is late, and it
asks the OS for child processes that died unnoticed since the iterator began. The process then
has to end without grain's exit handler, which would join the worker whose start never returned
and fail (`exit_for_dead_workers`).
"""
from __future__ import annotations

import os
import sys
from collections.abc import Collection
from typing import NoReturn

import jax
import psutil

AUTO = -1  # config.data.num_workers: resolved by `resolve` when the pipeline is built
WORKERS_PER_ACCELERATOR = 6
RESERVED_CPUS = 1  # for the training process itself


class WorkersDied(RuntimeError):
  """Worker processes died unnoticed by grain: their batches would never come."""


def auto_count(accelerators: int, cpus: int) -> int:
  """The worker count of a process with `accelerators` non-CPU devices and `cpus` usable
  CPUs (the rule above)."""
  if accelerators == 0:
    return 0
  return max(0, min(WORKERS_PER_ACCELERATOR * accelerators, cpus - RESERVED_CPUS))


def local_accelerators() -> int:
  """Non-CPU devices attached to this process."""
  return sum(d.platform != "cpu" for d in jax.local_devices())


def available_cpus() -> int:
  """CPUs this process may run on (its affinity mask; the machine's count where the OS has
  no such mask)."""
  if hasattr(os, "sched_getaffinity"):
    return len(os.sched_getaffinity(0))
  return os.cpu_count() or 1


def resolve(requested: int) -> int:
  """`requested` workers as given, or for AUTO `auto_count` of this process's devices and
  CPUs (read only then)."""
  if requested != AUTO:
    return requested
  return auto_count(local_accelerators(), available_cpus())


def dead_children() -> dict[int, int]:
  """{pid: exit status} (-N: killed by signal N, as multiprocessing writes it) of this
  process's child processes that have ended and that nothing has waited for yet; left for
  their parent to collect (`os.WNOWAIT`). Empty where the OS has no `os.waitid`."""
  if not hasattr(os, "waitid"):
    return {}
  statuses = {}
  for child in psutil.Process().children():
    try:
      ended = os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # collected since it was listed
      continue
    if ended is not None:
      statuses[child.pid] = (ended.si_status if ended.si_code == os.CLD_EXITED
                             else -ended.si_status)
  return statuses


def check_workers(known: Collection[int] = ()) -> None:
  """Raises WorkersDied, with their exit statuses and where their own errors are, if child
  processes of this one died unnoticed (`dead_children`), other than the `known` pids (those
  already dead when the iterator began: another iterator's workers, a child of the caller's
  own): called while a batch is late."""
  dead = [status for pid, status in dead_children().items() if pid not in known]
  if dead:
    raise WorkersDied(
        f"{len(dead)} child process(es) of this process died (exit status "
        f"{', '.join(map(str, dead))}) while it waited for a batch of its grain workers, "
        f"which grain would have waited for forever. A worker that fails as it starts (each "
        f"first imports the main module, {_main_module()}, again) prints its error above: fix "
        f"that, or set config.data.num_workers=0 to make the batches in this process")


def exit_for_dead_workers(error: WorkersDied) -> NoReturn:
  """Prints `data workers died: ERROR` and ends the process with status 1 at once. A normal
  exit would run grain's exit handler, which joins the worker whose start never returned and
  prints an AssertionError traceback below the line; what the run must close (its checkpoints,
  its metrics file) was closed on the way out of the trainer."""
  print(f"data workers died: {error}", file=sys.stderr, flush=True)
  sys.stdout.flush()
  os._exit(1)  # pylint: disable=protected-access


def _main_module() -> str:
  """What a spawned worker imports again first: the main module's name, or its file."""
  main = sys.modules["__main__"]
  spec = getattr(main, "__spec__", None)
  return spec.name if spec is not None else getattr(main, "__file__", "__main__")
