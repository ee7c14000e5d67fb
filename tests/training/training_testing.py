"""Shared by the training tests: a micro config (one small layer, short samples) that runs
the real trainer in seconds, the command line that selects it, and ways to run it in this
process or several runs in one subprocess."""
import os
import pathlib
import subprocess
import sys

from configs import pe
from nupa_jax.training import trainer

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Overrides of configs/pe.py:size=tiny that keep compile and step times small.
MICRO = {
    "model.num_layers": 1, "model.hidden": 32, "model.mlp": 64, "model.heads": 4,
    "model.kv_heads": 2, "train.batch_size": 16, "data.samples_per_row": 4,
    "data.train_digits": (1, 4), "eval.digits": (3, 4), "eval.per_length": 0,
    "eval.validation_batches": 1, "eval.batch_size": 8, "train.log_every": 1,
    "train.warmup_steps": 2,
}

# The micro model alone, as KEY=VALUE overrides for the scripts that take them (benchmarks).
MICRO_MODEL = tuple(f"{k}={v}" for k, v in MICRO.items() if k.startswith("model."))


def override(config, overrides: dict):
  """`config` with each dotted KEY of `overrides` set to its value."""
  for key, value in overrides.items():
    *path, name = key.split(".")
    node = config
    for part in path:
      node = node[part]
    node[name] = value
  return config


def micro_config(**overrides):
  return override(pe.get_config("size=tiny"), {**MICRO, **overrides})


def train(workdir, **overrides) -> dict:
  """The micro config's run in this process: for a run on one device that a test reads or
  compares against, not one whose command, signals or exit status are tested. It saves the
  interpreter start and the imports of a `python -m nupa_jax.train` (4-5 s of CPU)."""
  return trainer.train_and_evaluate(micro_config(**overrides), workdir)


def micro_args(workdir, **overrides) -> list[str]:
  """`python -m nupa_jax.train` arguments for the micro config."""
  args = ["--config=configs/pe.py:size=tiny", f"--workdir={workdir}"]
  for key, value in {**MICRO, **overrides}.items():
    args.append(f"--config.{key}={value}".replace(" ", ""))
  return args


def env(devices: int = 1) -> dict:
  """Environment of a subprocess with `devices` fake CPU devices (and the compilation cache the
  tests' processes share, tests/conftest.py). LLVM's optimisations are off: they double
  compile times, and the runs compared use the same flags."""
  flags = f"--xla_force_host_platform_device_count={devices} --xla_backend_optimization_level=0"
  return dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")


def run(module: str, args: list[str], devices: int = 1, check: bool = True,
        timeout: int = 300) -> subprocess.CompletedProcess:
  return _python(module, ["-m", module, *args], devices, check, timeout)


def train_in_one_process(runs: list[tuple[pathlib.Path, dict]], devices: int) -> None:
  """The micro config's runs of `runs` ((workdir, overrides) pairs) one after another in one
  subprocess with `devices` fake CPU devices: runs on several devices that a test compares
  (not their command line) share one interpreter start and one import of the trainer."""
  arg = repr([(str(workdir), overrides) for workdir, overrides in runs])
  run_script("micro_runs_main.py", [arg], devices, timeout=600)


def run_script(name: str, args: list[str], devices: int,
               timeout: int = 300) -> subprocess.CompletedProcess:
  """One of this folder's `*_main.py` scripts in a subprocess with `devices` fake CPU devices;
  it imports this module and the repository's packages."""
  path = pathlib.Path(__file__).parent
  return _python(name, [str(path / name), *args], devices, True, timeout,
                 PYTHONPATH=os.pathsep.join([str(ROOT), str(path)]))


def _python(name: str, argv: list[str], devices: int, check: bool, timeout: int,
            **environ: str) -> subprocess.CompletedProcess:
  result = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env(devices) | environ,
                          capture_output=True, text=True, timeout=timeout)
  if check and result.returncode:
    raise AssertionError(f"{name} failed ({result.returncode}):\n{result.stdout}\n"
                         f"{result.stderr[-4000:]}")
  return result
