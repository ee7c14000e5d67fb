"""launch/run_on_gpus.sh (one queue of sweeps per GPU, a shared deadline, one archive)
and collect.sh (finished runs into an experiment folder).

No GPU or training here: `nvidia-smi` is a stand-in that lists two GPUs and the sweep files
are scripts that record what they were given (or sleep past the deadline).
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tarfile
import time

import pytest

import launch_testing

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "launch" / "run_on_gpus.sh"
COLLECT = ROOT / "launch" / "collect.sh"


def _executable(path: pathlib.Path, text: str) -> None:
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(text)
  path.chmod(0o755)


@pytest.fixture
def machine(tmp_path):
  """PATH with a two-GPU nvidia-smi; SWEEPS_DIR with a recording sweep and a slow one."""
  bin_dir = tmp_path / "bin"
  _executable(bin_dir / "nvidia-smi", "#!/bin/sh\necho 'GPU 0: fake'\necho 'GPU 1: fake'\n")
  sweeps = tmp_path / "sweeps"
  _executable(sweeps / "exp" / "sweep.sh", """#!/usr/bin/env bash
mkdir -p "$1/run/checkpoints" "$1/run/eval"
echo "gpu=$CUDA_VISIBLE_DEVICES tasks=${TASKS:-} seeds=${SEEDS:-}" > "$1/run/eval/latest.json"
echo ckpt > "$1/run/checkpoints/state"
echo "sweep finished"
""")
  _executable(sweeps / "exp" / "sweep_other.sh", """#!/usr/bin/env bash
mkdir -p "$1" && echo other > "$1/other.txt"
""")
  _executable(sweeps / "slow" / "sweep.sh", """#!/usr/bin/env bash
mkdir -p "$1"
trap 'echo stopped > "$1/stopped"; exit 143' TERM
sleep 30 & wait
""")
  env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", SWEEPS_DIR=str(sweeps))
  return tmp_path, env


def _run(env, *args, timeout=60):
  return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True,
                        timeout=timeout, check=False)


def test_queues_run_per_gpu_and_are_archived_without_checkpoints(machine):
  tmp_path, env = machine
  root, archive = tmp_path / "r", tmp_path / "results.tgz"
  result = _run(env, "120", str(root), str(archive),
                "TASKS=add_int,add_float SEEDS=0 exp; exp/sweep_other.sh", "exp")
  assert result.returncode == 0, result.stderr
  assert (root / "exp_add_int-add_float_0/run/eval/latest.json").read_text() == (
      "gpu=0 tasks=add_int,add_float seeds=0\n")
  assert (root / "exp/run/eval/latest.json").read_text() == "gpu=1 tasks= seeds=\n"
  assert (root / "exp_other/other.txt").read_text() == "other\n"  # then GPU 0's second sweep
  with tarfile.open(archive) as tar:
    names = set(tar.getnames())
  assert "./exp_add_int-add_float_0/run/eval/latest.json" in names
  assert not any("checkpoints" in n for n in names)
  assert "GPU 0: exp_add_int-add_float_0 exited with status 0 (sweep finished)" in result.stdout


def test_deadline_stops_a_sweep_with_sigterm_and_skips_the_rest(machine):
  tmp_path, env = machine
  root = tmp_path / "r"
  env["MIN_SECONDS"] = "1"
  result = _run(env, "3", str(root), str(tmp_path / "a.tgz"), "slow; exp", timeout=30)
  assert result.returncode == 0, result.stderr
  assert (root / "slow" / "stopped").read_text() == "stopped\n"
  assert "no time left for exp" in result.stderr
  assert not (root / "exp").exists()


@pytest.mark.parametrize("queues, status, message", [
    (["exp", "exp", "exp"], 2, "3 queues but 2 GPUs"),
    (["missing; exp"], 1, "no sweep file"),
    (["failing", "exp"], 1, "a sweep failed or was not found"),
])
def test_errors(machine, queues, status, message):
  tmp_path, env = machine
  _executable(pathlib.Path(env["SWEEPS_DIR"]) / "failing" / "sweep.sh",
              "#!/usr/bin/env bash\necho 'run failed'; exit 1\n")
  result = _run(env, "60", str(tmp_path / "r"), str(tmp_path / "a.tgz"), *queues)
  assert result.returncode == status and message in result.stderr, result.stderr
  if status == 1:  # the other sweeps still ran and the archive was still written
    assert (tmp_path / "r" / "exp" / "run" / "eval" / "latest.json").exists()
    assert (tmp_path / "a.tgz").exists()


def test_collect_takes_only_the_runs_the_sweep_finished(tmp_path):
  """collect.sh: a run cut after a periodic evaluation has eval/latest.json but is not done;
  CUT=1 takes it too."""
  sweep = tmp_path / "exp_part"
  for name in ("a", "b"):
    (sweep / name / "eval").mkdir(parents=True)
    (sweep / name / "eval" / "latest.json").write_text("{}")
    (sweep / name / "config.json").write_text("{}")
    (sweep / name / "train_metrics.jsonl").write_text("")
  (sweep / "sweep.json").write_text(json.dumps({"runs": [
      {"name": "a", "status": "done"}, {"name": "b", "status": "interrupted"}]}))
  python = tmp_path / "python"  # the report step is recorded, not run
  _executable(python, f"""#!/usr/bin/env bash
if [ "$1" = -m ]; then echo "$@" > {tmp_path}/report_call; exit 0; fi
exec {sys.executable} "$@"
""")
  experiment = f"_test_collect_{os.getpid()}"
  out = ROOT / "docs" / "results" / experiment
  try:
    result = subprocess.run(["bash", str(COLLECT), experiment, str(sweep)],
                            env=dict(os.environ, PYTHON=str(python)),
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert "skipping b (interrupted)" in result.stderr
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["a"]
    assert (out / "sweeps" / "exp_part.json").exists()
    call = (tmp_path / "report_call").read_text().split()
    assert call[:3] == ["-m", "nupa_jax.report", "--workdirs"]
    assert call[3] == f"docs/results/{experiment}/runs/a"  # checkout-relative paths
    other = tmp_path / "exp_other"  # another sweep that also finished a run named a
    shutil.copytree(sweep, other)
    result = subprocess.run(["bash", str(COLLECT), experiment, str(sweep), str(other)],
                            env=dict(os.environ, PYTHON=str(python)),
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert f"{sweep} and {other} both hold run a" in result.stderr
    assert not (out / "sweeps" / "exp_other.json").exists()  # refused before copying
    result = subprocess.run(["bash", str(COLLECT), experiment, str(sweep)],
                            env=dict(os.environ, PYTHON=str(python), CUT="1"),
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["a", "b"]
  finally:
    shutil.rmtree(out, ignore_errors=True)


def test_an_item_can_take_several_gpus(machine):
  tmp_path, env = machine
  root = tmp_path / "r"
  result = _run(env, "60", str(root), str(tmp_path / "a.tgz"),
                "CUDA_VISIBLE_DEVICES=0,1 SEEDS=3 exp")
  assert result.returncode == 0, result.stderr
  assert (root / "exp_3/run/eval/latest.json").read_text() == "gpu=0,1 tasks= seeds=3\n"
  assert "GPU 0,1: exp_3 exited with status 0" in result.stdout


def test_queues_per_gpu_share_the_gpus_and_their_memory(machine):
  """QUEUES_PER_GPU=2 on two GPUs: four queues, queue i on GPU i mod 2, each process with
  0.9 / 2 of its GPU's memory; a fifth queue is refused."""
  tmp_path, env = machine
  _executable(pathlib.Path(env["SWEEPS_DIR"]) / "mem" / "sweep.sh", """#!/usr/bin/env bash
echo "gpu=$CUDA_VISIBLE_DEVICES mem=$XLA_PYTHON_CLIENT_MEM_FRACTION" > "$1.txt"
""")
  env.pop("XLA_PYTHON_CLIENT_MEM_FRACTION", None)
  env["QUEUES_PER_GPU"] = "2"
  root = tmp_path / "r"
  result = _run(env, "60", str(root), str(tmp_path / "a.tgz"),
                *(f"SEEDS={i} mem" for i in range(4)))
  assert result.returncode == 0, result.stderr
  assert [(root / f"mem_{i}.txt").read_text() for i in range(4)] == [
      f"gpu={i % 2} mem=0.45\n" for i in range(4)]
  refused = _run(env, "60", str(tmp_path / "r5"), str(tmp_path / "b.tgz"), *["mem"] * 5)
  assert refused.returncode == 2
  assert "5 queues but 2 GPUs x QUEUES_PER_GPU=2" in refused.stderr


def test_sweeps_are_looked_up_in_docs_results_by_default(machine):
  tmp_path, env = machine
  del env["SWEEPS_DIR"]
  result = _run(env, "60", str(tmp_path / "r"), str(tmp_path / "a.tgz"), "no_such_experiment")
  assert result.returncode == 1
  assert f"no sweep file {ROOT}/docs/results/no_such_experiment\n" in result.stderr


def test_eval_cut_evaluates_a_cut_run_from_its_stop_checkpoint(machine):
  """EVAL_CUT=S: the sweep is stopped S seconds early, then its cut run (a checkpoint, no
  eval/latest.json) is evaluated on the queue's GPU into eval/latest.json; a run that has its
  evaluation or no checkpoint is left alone."""
  tmp_path, env = machine
  _executable(pathlib.Path(env["SWEEPS_DIR"]) / "cut" / "sweep.sh", """#!/usr/bin/env bash
mkdir -p "$1/run/checkpoints" "$1/done/checkpoints" "$1/done/eval" "$1/fresh"
echo final > "$1/done/eval/latest.json"
# Resumed from an earlier job's cut (evaluated at step 100), then cut again at step 200; and
# a run whose evaluation is of its newest checkpoint.
mkdir -p "$1/resumed/checkpoints/100" "$1/resumed/checkpoints/200" "$1/resumed/eval"
echo '{"_meta": {"step": 100}}' > "$1/resumed/eval/latest.json"
mkdir -p "$1/current/checkpoints/100" "$1/current/eval"
echo '{"_meta": {"step": 100}}' > "$1/current/eval/latest.json"
trap 'exit 143' TERM
sleep 30 & wait
""")
  python = tmp_path / "python"  # stands in for `python -m nupa_jax.evaluate`
  _executable(python, """#!/usr/bin/env bash
for a in "$@"; do case $a in --out=*) out=${a#--out=};; esac; done
mkdir -p "$(dirname "$out")" && echo "gpu=$CUDA_VISIBLE_DEVICES $*" > "$out"
""")
  env.update(EVAL_CUT="4", MIN_SECONDS="1", PYTHON=str(python))
  root = tmp_path / "r"
  result = _run(env, "7", str(root), str(tmp_path / "a.tgz"), "exp", "cut", timeout=30)
  assert result.returncode == 0, result.stderr
  written = (root / "cut/run/eval/latest.json").read_text()
  assert written.startswith("gpu=1 -m nupa_jax.evaluate --workdir=")
  assert "--checkpoint=latest" in written
  assert (root / "cut/done/eval/latest.json").read_text() == "final\n"
  assert "--checkpoint=latest" in (root / "cut/resumed/eval/latest.json").read_text()
  assert (root / "cut/current/eval/latest.json").read_text() == '{"_meta": {"step": 100}}\n'
  assert not (root / "cut/fresh/eval").exists()
  assert "GPU 1: evaluating cut run" in result.stdout
  assert (root / "exp/run/eval/latest.json").read_text() == "gpu=0 tasks= seeds=\n"  # done


def test_a_run_that_failed_fails_the_job_even_when_its_sweep_is_cut(machine):
  tmp_path, env = machine
  _executable(pathlib.Path(env["SWEEPS_DIR"]) / "half" / "sweep.sh", """#!/usr/bin/env bash
mkdir -p "$1"
echo '{"runs": [{"name": "a", "status": "failed"}, {"name": "b", "status": "running"}]}' \\
  > "$1/sweep.json"
trap 'exit 143' TERM
sleep 30 & wait
""")
  env["MIN_SECONDS"] = "1"
  result = _run(env, "3", str(tmp_path / "r"), str(tmp_path / "a.tgz"), "half", timeout=30)
  assert result.returncode == 1, result.stderr
  assert "half: a run failed before the deadline" in result.stderr
  assert (tmp_path / "a.tgz").exists()


def test_a_relative_root_is_where_the_sweeps_write(machine):
  """Sweeps run from another folder (paper_sweep.sh changes to the repository's root): a
  relative ROOT must still name the folder the command was started in."""
  tmp_path, env = machine
  _executable(pathlib.Path(env["SWEEPS_DIR"]) / "moving" / "sweep.sh", """#!/usr/bin/env bash
cd "$(dirname "$0")" && mkdir -p "$1" && echo here > "$1/result.txt"
""")
  result = subprocess.run(["bash", str(SCRIPT), "60", "rel_root", "rel.tgz", "moving"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          check=False)
  assert result.returncode == 0, result.stderr
  assert (tmp_path / "rel_root" / "moving" / "result.txt").read_text() == "here\n"
  with tarfile.open(tmp_path / "rel.tgz") as tar:
    assert "./moving/result.txt" in tar.getnames()


@pytest.mark.parametrize("how, status", [("sigterm", 143), ("ctrl_c", 130)])
def test_a_stop_of_the_job_stops_the_sweeps_in_order_and_archives(machine, how, status):
  """A scheduler's TERM to the job script, or a Ctrl-C to its terminal's process group: the
  running sweep is stopped (as the deadline stops it), the queue's next sweep never starts,
  and what was written is archived."""
  tmp_path, env = machine
  root, archive = tmp_path / "r", tmp_path / "a.tgz"
  proc = subprocess.Popen(["bash", str(SCRIPT), "120", str(root), str(archive), "slow; exp"],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True,
                          preexec_fn=launch_testing.as_from_a_terminal)
  try:
    deadline = time.monotonic() + 30
    while not (root / "slow").exists():
      assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
      time.sleep(0.1)
    time.sleep(0.5)  # the sweep has set its trap
    start = time.monotonic()
    if how == "ctrl_c":
      os.killpg(proc.pid, signal.SIGINT)
    else:
      proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - start < 15, "the sweep was not stopped"
    assert proc.returncode == status, stderr
    assert (root / "slow" / "stopped").read_text() == "stopped\n"
    assert not (root / "exp").exists()
    with tarfile.open(archive) as tar:
      assert "./slow/stopped" in tar.getnames()
  finally:
    try:
      os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
      pass
