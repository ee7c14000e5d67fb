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
"""
from __future__ import annotations

import os

import jax

AUTO = -1  # config.data.num_workers: resolved by `resolve` when the pipeline is built
WORKERS_PER_ACCELERATOR = 6
RESERVED_CPUS = 1  # for the training process itself


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
