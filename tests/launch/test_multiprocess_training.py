"""One run, two process layouts: 1 process x N CPU devices and 2 processes x N/2 devices.

Driven end to end by launch/local.sh and `python -m nupa_jax.train`: the same
config and global batch must give the same losses step by step and the same evaluation
(sharded over the processes, gathered by process 0); a checkpoint written by 2 processes must
resume in 1 and vice versa, data position included, continuing with the losses of the
uninterrupted run. In the default suite: the micro model on a (data 2, fsdp 2) mesh of 4
devices, LLVM optimisation off (about a minute on 2 cores). Slow marker: the tiny preset on a
(data 2, fsdp 2, tensor 2) mesh of 8 devices (about 4 minutes). Every successful run leaves
jax.distributed in order (no gRPC UNAVAILABLE / CANCELLED lines); a process that raises fails
the job with its status.
"""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
from absl import flags

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "training"))
import training_testing  # noqa: E402  (shared micro config)

ROOT = pathlib.Path(__file__).resolve().parents[2]
LOCAL_SH = ROOT / "launch" / "local.sh"
STEPS = 4
COMMON_FLAGS = (
    f"--config.train.steps={STEPS}", "--config.train.log_every=1",
    "--config.checkpoint.every=2",  # a checkpoint at step 2 to resume from
    "--config.eval.per_length=2", "--config.eval.digits=(3,4)",
    "--config.eval.validation_batches=1", "--config.data.exclude_test=false",
)
TINY_8_DEVICES = ("--config=configs/pe.py:size=tiny", *COMMON_FLAGS,
                  "--config.mesh.shape.data=2", "--config.mesh.shape.fsdp=2",
                  "--config.mesh.shape.tensor=2")
MICRO_4_DEVICES = ("--config=configs/pe.py:size=tiny", *(
    f"--config.{key}={value}".replace(" ", "") for key, value in training_testing.MICRO.items()
    if not key.startswith(("eval.", "train.log_every"))), *COMMON_FLAGS,
                   "--config.mesh.shape.data=2", "--config.mesh.shape.fsdp=2",
                   "--config.mesh.shape.tensor=1")


def _skip_reason() -> str | None:
  """Why the trainer cannot run as several processes yet (None when it can)."""
  try:
    import nupa_jax.train  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError as e:
    return f"nupa_jax.train is not importable yet ({e})"
  if "process_id" not in flags.FLAGS:
    return ("nupa_jax.train does not call nupa_jax.distributed yet (no --process_id flag): "
            "add distributed.define_flags() and distributed.initialize_from_flags()")
  return None


def _start(workdir: pathlib.Path, processes: int, devices: int, flags: tuple[str, ...],
           fast_compile: bool, module: str = "nupa_jax.train") -> subprocess.Popen:
  """`launch/local.sh` running `module` as `processes` processes. Runs share compiled programs
  through the compilation cache the tests' processes share (tests/conftest.py), so that a
  rerun or resume does not compile again what an earlier run compiled; the cache key holds
  each program's device ids, which differ between one and two processes, so each layout
  still compiles and runs its own programs."""
  path = [str(ROOT), str(pathlib.Path(__file__).resolve().parent), os.environ.get("PYTHONPATH")]
  env = dict(os.environ, PYTHON=sys.executable, PYTHONPATH=os.pathsep.join(filter(None, path)))
  env.pop("XLA_FLAGS", None)
  if fast_compile:
    env["XLA_FLAGS"] = "--xla_backend_optimization_level=0"
  return subprocess.Popen(
      [str(LOCAL_SH), "-n", str(processes), "-d", str(devices // processes), "-p", "cpu",
       "-m", module, "--", *flags, f"--workdir={workdir}"],
      cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


# What a process prints when the coordination service goes away under it.
GRPC_ERRORS = re.compile(r"^.*\b(UNAVAILABLE|CANCELLED)\b.*$", re.M)


def _finish(*runs: subprocess.Popen) -> None:
  """Waits for `runs`; each must succeed and leave jax.distributed without gRPC errors."""
  for run in runs:
    out, _ = run.communicate(timeout=900)
    assert run.returncode == 0, out[-4000:]
    errors = [m.group(0) for m in GRPC_ERRORS.finditer(out)]
    assert not errors, "\n".join(errors)


def _records(workdir: pathlib.Path) -> list[dict]:
  return [json.loads(line)
          for line in (workdir / "train_metrics.jsonl").read_text().splitlines()]


def _losses(workdir: pathlib.Path) -> dict[int, float]:
  return {r["step"]: r["loss"] for r in _records(workdir) if "loss" in r}


def _evaluation(workdir: pathlib.Path) -> dict[str, float]:
  """eval/latest.json flattened to {"task/bucket/metric": value} (numbers only)."""
  out = {}

  def walk(prefix, value):
    if isinstance(value, dict):
      for key, inner in value.items():
        walk(f"{prefix}/{key}", inner)
    elif isinstance(value, (int, float)):
      out[prefix] = value

  walk("", json.loads((workdir / "eval" / "latest.json").read_text()))
  return out


def _resume_copy(source: pathlib.Path, target: pathlib.Path) -> pathlib.Path:
  """A copy of a finished run rewound to its step-2 checkpoint (as if killed after step 2)."""
  shutil.copytree(source, target)
  shutil.rmtree(target / "checkpoints" / str(STEPS))
  return target


@pytest.mark.parametrize("devices, flags, fast_compile", [
    pytest.param(4, MICRO_4_DEVICES, True, id="micro-4-devices"),
    pytest.param(8, TINY_8_DEVICES, False, id="tiny-8-devices", marks=pytest.mark.slow),
])
def test_one_and_two_processes_train_alike_and_share_checkpoints(tmp_path, devices, flags,
                                                                 fast_compile):
  reason = _skip_reason()
  if reason:
    pytest.skip(reason)
  start = lambda workdir, processes: _start(workdir, processes, devices, flags, fast_compile)
  one, two = tmp_path / "one", tmp_path / "two"
  _finish(start(one, 1), start(two, 2))  # started together: they overlap their start-up
  reference = _losses(one)
  assert sorted(reference) == list(range(1, STEPS + 1))
  assert _losses(two) == pytest.approx(reference, rel=1e-5)
  evaluation = _evaluation(one)
  assert evaluation and _evaluation(two) == pytest.approx(evaluation, rel=1e-6)

  # Step-2 checkpoints written by 2 processes resume in 1, and those of 1 in 2.
  two_in_one = _resume_copy(two, tmp_path / "two_in_one")
  one_in_two = _resume_copy(one, tmp_path / "one_in_two")
  _finish(start(two_in_one, 1), start(one_in_two, 2))
  for resumed in (two_in_one, one_in_two):
    assert {"event": "resume", "step": 2} in _records(resumed)
    assert _losses(resumed) == pytest.approx(reference, rel=1e-5)
    assert _evaluation(resumed) == pytest.approx(evaluation, rel=1e-6)


def test_a_process_that_raises_fails_the_job_with_its_status(tmp_path):
  reason = _skip_reason()
  if reason:
    pytest.skip(reason)
  run = _start(tmp_path / "run", 2, 4, MICRO_4_DEVICES, True, module="failing_train")
  out, _ = run.communicate(timeout=900)
  assert run.returncode == 1, out[-4000:]  # the status of process 1's uncaught exception
  assert "[p1] RuntimeError: process 1 fails on purpose" in out
  assert "local.sh: process 1 exited with status 1; stopping the others" in out


@pytest.mark.parametrize("signum, status, per_call", [
    pytest.param(signal.SIGTERM, 143, 1, id="sigterm"),
    pytest.param(signal.SIGINT, 130, 1, id="sigint", marks=pytest.mark.slow),
    pytest.param(signal.SIGTERM, 143, 2, id="sigterm-2-steps-a-call", marks=pytest.mark.slow),
])
def test_a_signal_stops_both_processes_with_a_checkpoint_and_the_rerun_resumes_exactly(
    tmp_path, signum, status, per_call):
  """SIGTERM (SIGINT) to launch/local.sh mid-run: both processes stop at one step, save it,
  exit with 143 (130) and one line; the rerun continues with the losses of an uninterrupted
  run. With 2 steps a call (`train.steps_per_call`) the processes agree on a count of calls
  and stop at the end of one."""
  reason = _skip_reason()
  if reason:
    pytest.skip(reason)
  steps = 40  # long enough to be stopped mid-way
  stop_flags = tuple(f for f in MICRO_4_DEVICES if not f.startswith(
      ("--config.train.steps=", "--config.checkpoint.every=", "--config.train.log_every=",
       "--config.eval.per_length="))) + (
          f"--config.train.steps={steps}", "--config.checkpoint.every=1000",
          f"--config.train.log_every={per_call}", f"--config.train.steps_per_call={per_call}",
          "--config.eval.per_length=0")  # the losses are compared: no test-set evaluation
  start = lambda workdir: _start(workdir, 2, 4, stop_flags, fast_compile=True)
  reference, stopped = tmp_path / "reference", tmp_path / "stopped"
  uninterrupted, run = start(reference), start(stopped)
  deadline = time.time() + 600
  while time.time() < deadline and run.poll() is None:
    if (stopped / "train_metrics.jsonl").exists() and len(_losses(stopped)) >= 5:
      break
    time.sleep(0.05)
  run.send_signal(signum)
  out, _ = run.communicate(timeout=600)
  _finish(uninterrupted)
  assert run.returncode == status, out[-4000:]
  stop = [r for r in _records(stopped) if r.get("event") == "stop"]
  assert len(stop) == 1 and 5 <= stop[0]["step"] < steps, out[-4000:]
  at = stop[0]["step"]
  assert at % per_call == 0, at
  assert re.search(rf"^\[p0\] stopped by {signum.name}.* at step {at}: checkpoint saved in "
                   rf".*; rerun the same command to resume$", out, re.M), out[-4000:]
  assert "Traceback" not in out and not GRPC_ERRORS.search(out), out[-4000:]
  assert sorted(int(p.name) for p in (stopped / "checkpoints").iterdir()) == [at]

  _finish(start(stopped))
  records = _records(stopped)
  assert {"event": "resume", "step": at} in records
  assert sorted(_losses(stopped)) == list(range(per_call, steps + 1, per_call))
  assert _losses(stopped) == _losses(reference)  # step for step, the same processes' sums
