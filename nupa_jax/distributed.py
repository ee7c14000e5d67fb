"""Multi-process runs: when to call `jax.distributed.initialize()`, and which process is 0.

A run on N hosts (or N processes on one host) is N copies of the same command; each must join
the others through `jax.distributed.initialize()` before anything touches a device, after
which `jax.devices()` lists every process's devices and one mesh spans them all. The entry
points (`python -m nupa_jax.train`, `nupa_jax.evaluate`) call `initialize_from_flags()` first
thing; whether to initialise, and with what, is decided here, in this order:

1. Explicit settings: `--coordinator_address / --num_processes / --process_id`, each falling
   back to the environment variables JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES /
   JAX_PROCESS_ID (what launch/local.sh and launch/gpu_slurm.sbatch set). All three given: used
   as they are, JAX's cluster detection off (so a job started under SLURM by local.sh is not
   mistaken for a SLURM step). `num_processes=1`: a single process, nothing to do.
2. A multi-process launcher JAX detects by itself: a SLURM step of several tasks (`srun`),
   Open MPI (`mpirun`), a Cloud TPU VM (single host or pod slice). Explicit values given
   with it (e.g. only the coordinator address) override what JAX would detect.
3. Otherwise one process: no call, no coordinator (a laptop, one GPU, one TPU host's run
   started without a launcher behaves exactly as before).

Partial explicit settings with no launcher to fill in the rest are an error naming the
missing flags: a process that guessed would wait for peers that never come.

Leaving: an entry point that finished its work calls `shutdown()`, so that the processes meet
once more and then leave the coordination service together, process 0 (which hosts it) last.
A process that fails skips that meeting and exits at once with its error (see
`_exit_at_once_on_error`), so the launcher sees the failure and stops the others.
"""
from __future__ import annotations

import dataclasses
import glob
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping

import jax
from absl import flags
from jax.experimental import multihost_utils

ENV_COORDINATOR = "JAX_COORDINATOR_ADDRESS"  # also read by jax.distributed itself
ENV_NUM_PROCESSES = "JAX_NUM_PROCESSES"
ENV_PROCESS_ID = "JAX_PROCESS_ID"


def _slurm(env: Mapping[str, str]) -> bool:
  """An `srun` step of several tasks: the variables JAX's SLURM detection reads.

  SLURM_STEP_NODELIST exists inside an srun step only, so a batch script that runs the
  trainer directly (one process, SLURM_NTASKS counting the whole allocation) is not a
  multi-process run.
  """
  needed = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID",
            "SLURM_LOCALID")
  return all(k in env for k in needed) and int(env["SLURM_NTASKS"]) > 1


def _openmpi(env: Mapping[str, str]) -> bool:
  """An `mpirun` job of several ranks (OMPI_MCA_orte_hnp_uri exists only under mpirun)."""
  return ("OMPI_MCA_orte_hnp_uri" in env
          and int(env.get("OMPI_COMM_WORLD_SIZE", "1")) > 1)


def _cloud_tpu(env: Mapping[str, str]) -> bool:
  """A Cloud TPU VM (TPU chips present, libtpu installed). JAX reads the slice's workers
  from the VM metadata, so initialising is right on a pod slice and harmless on one host."""
  del env
  chips = glob.glob("/dev/accel[0-9]*") + glob.glob("/dev/vfio/[0-9]*")
  return bool(chips) and importlib.util.find_spec("libtpu") is not None


# Multi-process launchers that JAX's `initialize()` recognises on its own, in the order
# checked: each says whether this process is one of several started by it.
CLUSTERS: dict[str, Callable[[Mapping[str, str]], bool]] = {
    "slurm": _slurm,
    "openmpi": _openmpi,
    "cloud-tpu": _cloud_tpu,
}


@dataclasses.dataclass(frozen=True)
class Settings:
  """What `jax.distributed.initialize` is called with; None fields are left to JAX."""
  source: str  # "explicit" or a CLUSTERS key
  coordinator_address: str | None = None
  num_processes: int | None = None
  process_id: int | None = None


def _int(value, name: str, env_name: str) -> int | None:
  if value is None or value == "":
    return None
  try:
    return int(value)
  except ValueError:
    raise ValueError(f"--{name} / {env_name}={value!r}: expected an integer") from None


def resolve(coordinator_address: str | None = None, num_processes: int | None = None,
            process_id: int | None = None, *,
            environ: Mapping[str, str] | None = None) -> Settings | None:
  """The multi-process settings of this process, or None for a single-process run.

  Arguments not given fall back to JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES /
  JAX_PROCESS_ID in `environ` (default os.environ). Touches no device.
  """
  env = os.environ if environ is None else environ
  address = coordinator_address or env.get(ENV_COORDINATOR) or None
  count = _int(num_processes if num_processes is not None else env.get(ENV_NUM_PROCESSES),
               "num_processes", ENV_NUM_PROCESSES)
  index = _int(process_id if process_id is not None else env.get(ENV_PROCESS_ID),
               "process_id", ENV_PROCESS_ID)
  if count is not None and count < 1:
    raise ValueError(f"--num_processes={count}: expected a positive number of processes")
  if count is not None and index is not None and not 0 <= index < count:
    raise ValueError(f"--process_id={index} is outside [0, {count}) for "
                     f"--num_processes={count}")
  if count == 1:
    return None
  if None not in (address, count, index):
    return Settings("explicit", address, count, index)
  cluster = next((name for name, present in CLUSTERS.items() if present(env)), None)
  if cluster is not None:
    return Settings(cluster, address, count, index)
  given = {"coordinator_address": address, "num_processes": count, "process_id": index}
  if all(v is None for v in given.values()):
    return None
  missing = ", ".join(f"--{k}" for k, v in given.items() if v is None)
  raise ValueError(
      f"incomplete multi-process settings: {missing} missing (given: "
      f"{', '.join(f'--{k}={v}' for k, v in given.items() if v is not None)}) and no "
      f"launcher (srun, mpirun, Cloud TPU) to supply them; give all three flags or the "
      f"variables {ENV_COORDINATOR}, {ENV_NUM_PROCESSES}, {ENV_PROCESS_ID}, or start the "
      f"processes with launch/local.sh")


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, *,
               initialization_timeout: int = 300) -> Settings | None:
  """Joins the other processes of this run (see the module docstring); returns what was used.

  Must run before anything touches a device (jax.devices(), any computation). A no-op
  returning None for a single-process run.
  """
  settings = resolve(coordinator_address, num_processes, process_id)
  if settings is None:
    return None
  jax.distributed.initialize(
      coordinator_address=settings.coordinator_address,
      num_processes=settings.num_processes, process_id=settings.process_id,
      cluster_detection_method="deactivate" if settings.source == "explicit" else None,
      initialization_timeout=initialization_timeout)
  _exit_at_once_on_error()
  return settings


def shutdown() -> None:
  """Leaves the multi-process run in order, after this process's work succeeded; a no-op for
  a single process.

  Without it, each process leaves from Python's exit hooks as soon as its own work is done:
  process 0 may stop the coordination service while a peer still talks to it (its last
  checkpoint write, its heartbeats), and the peer prints gRPC UNAVAILABLE / CANCELLED errors
  after a successful run. Here every process first waits for the others' device work
  (a barrier over all devices), then JAX's own shutdown barrier lets every client disconnect
  before process 0 stops the service; JAX's exit hook then finds nothing left to do.
  """
  if not jax.distributed.is_initialized():
    return
  multihost_utils.sync_global_devices("nupa_jax.distributed.shutdown")
  jax.distributed.shutdown()


def _exit_at_once_on_error() -> None:
  """Makes an uncaught exception end this process at once, after printing its traceback.

  Left alone, Python's exit runs JAX's distributed shutdown, which waits (up to minutes) at a
  barrier for the other processes, while they wait for this one in their next collective:
  the run hangs instead of failing. Exiting at once lets the launcher (launch/local.sh,
  `srun --kill-on-bad-exit`, a pod's health checks) see the failure and stop the rest.
  """
  previous = sys.excepthook

  def hook(kind, value, traceback):
    previous(kind, value, traceback)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)  # pylint: disable=protected-access

  sys.excepthook = hook


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Defines --coordinator_address, --num_processes, --process_id for an entry point.

  Idempotent: train.py and evaluate.py both call it, and may be imported into one process.
  """
  if "process_id" in flag_values:
    return
  flags.DEFINE_string("coordinator_address", None,
                      f"host:port of process 0's coordinator (default ${ENV_COORDINATOR}, "
                      "or detected under srun / mpirun / Cloud TPU)", flag_values=flag_values)
  flags.DEFINE_integer("num_processes", None,
                       f"processes in this run (default ${ENV_NUM_PROCESSES}, or detected); "
                       "1 = no multi-process initialisation", flag_values=flag_values)
  flags.DEFINE_integer("process_id", None,
                       f"this process's index in [0, num_processes) (default "
                       f"${ENV_PROCESS_ID}, or detected)", flag_values=flag_values)


def initialize_from_flags(flag_values: flags.FlagValues = flags.FLAGS) -> Settings | None:
  """`initialize()` with the values of the flags `define_flags()` defined."""
  return initialize(flag_values.coordinator_address, flag_values.num_processes,
                    flag_values.process_id)


def is_main_process() -> bool:
  """True on process 0, the one that writes logs, results and prints (after initialize)."""
  return jax.process_index() == 0
