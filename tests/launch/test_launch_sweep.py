"""launch/sweep.py: grids expand to the right runs, failures are recorded and reported.

Nothing trains here: `--python` points at a fake interpreter that records its arguments and
fails for the runs a test chooses, so the runners' bookkeeping is what is tested.
"""
import json
import os
import pathlib
import shlex
import signal
import subprocess
import sys
import time

import pytest

import launch_testing

ROOT = pathlib.Path(__file__).resolve().parents[2]
SWEEP = ROOT / "launch" / "sweep.py"


def _sweep(*args: str, cwd=ROOT, env=None) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, str(SWEEP), *args], cwd=cwd, capture_output=True,
                        text=True, timeout=120, check=False, env=env)


def _fake_python(tmp_path: pathlib.Path, fail_on: str) -> pathlib.Path:
  """An interpreter stand-in: logs each call, fails (status 7) when `fail_on` is an argument."""
  path = tmp_path / "fake_python"
  path.write_text(f"""#!/usr/bin/env bash
printf '%s\\n' "$*" >> {tmp_path}/calls
for arg in "$@"; do
  if [[ "$arg" == {shlex.quote(fail_on)} ]]; then echo "loss became nan" >&2; exit 7; fi
done
echo "trained"
""")
  path.chmod(0o755)
  return path


def _flaky_python(tmp_path: pathlib.Path, fail_on: str, failures: int,
                  status: int) -> pathlib.Path:
  """Like _fake_python, but a run with `fail_on` among its arguments fails (with `status`)
  only on its first `failures` calls: a worker that died, not a bad config."""
  path = tmp_path / "flaky_python"
  count = tmp_path / "failed"
  path.write_text(f"""#!/usr/bin/env bash
printf '%s\\n' "$*" >> {tmp_path}/calls
for arg in "$@"; do
  if [[ "$arg" == {shlex.quote(fail_on)} ]]; then
    n=$(( $(cat {count} 2>/dev/null || echo 0) + 1 ))
    if [ "$n" -le {failures} ]; then
      echo "$n" > {count}; echo "worker died $n" >&2; exit {status}
    fi
  fi
done
echo "trained"
""")
  path.chmod(0o755)
  return path


def _calls(tmp_path: pathlib.Path) -> list[str]:
  path = tmp_path / "calls"
  return path.read_text().splitlines() if path.exists() else []


def test_print_expands_the_grid_in_order():
  result = _sweep("--config=configs/pe.py", "--runner=print", "--out=runs/s", "--python=py",
                  "--grid", "pe=rope,nope,alibi;task=add_int,add_float;seed=0,1,2")
  assert result.returncode == 0, result.stderr
  lines = result.stdout.splitlines()
  assert len(lines) == 18
  assert lines[:2] == [
      "py -m nupa_jax.train --config=configs/pe.py:pe=rope,task=add_int "
      "--workdir=runs/s/pe-rope_task-add_int_seed-0 --config.seed=0",
      "py -m nupa_jax.train --config=configs/pe.py:pe=rope,task=add_int "
      "--workdir=runs/s/pe-rope_task-add_int_seed-1 --config.seed=1"]
  assert lines[-1] == (
      "py -m nupa_jax.train --config=configs/pe.py:pe=alibi,task=add_float "
      "--workdir=runs/s/pe-alibi_task-add_float_seed-2 --config.seed=2")
  points = set()
  for line in lines:
    argv = shlex.split(line)
    config = argv[3].split(":")[1]
    seed = argv[5].split("=")[1]
    points.add((config, seed))
  assert points == {(f"pe={pe},task={task}", seed) for pe in ("rope", "nope", "alibi")
                    for task in ("add_int", "add_float") for seed in "012"}


def test_fixed_args_dotted_keys_and_overrides(tmp_path):
  result = _sweep("--config=configs/pe.py:size=tiny", "--runner=print", "--out=o",
                  "--python=py", "--grid", "train.learning_rate=1e-3,3e-4; pe=fire",
                  "--config.train.steps=50")
  assert result.stdout.splitlines() == [
      "py -m nupa_jax.train --config=configs/pe.py:size=tiny,pe=fire "
      f"--workdir=o/train.learning_rate-{lr}_pe-fire --config.train.learning_rate={lr} "
      "--config.train.steps=50" for lr in ("1e-3", "3e-4")]
  assert not (tmp_path / "o").exists() and not (ROOT / "o").exists()  # print writes nothing


@pytest.mark.parametrize("args, message", [
    (["--grid", "pe"], "grid group 'pe' is not of the form key=value1,value2"),
    (["--grid", "pe=rope;pe=nope"], "grid key 'pe' appears twice"),
    (["--grid", "pe=rope,rope"], "grid key 'pe' repeats a value"),
    (["--grid", "size=tiny"], "grid keys ['size'] are also fixed in --config"),
    (["--grid", "pe=rope", "--steps=3"], "config overrides are written --config.a.b=value"),
    (["--grid", "pe=a/b,a-b"], "two grid points share the run name 'pe-a-b'"),
])
def test_errors_name_the_fix(args, message):
  result = _sweep("--config=configs/pe.py:size=tiny", "--runner=print", *args)
  assert result.returncode == 2 and message in result.stderr, result.stderr


def test_missing_config_file():
  result = _sweep("--config=configs/nope.py", "--grid=pe=rope", "--runner=print")
  assert result.returncode == 2 and "no file configs/nope.py" in result.stderr


def test_local_runner_reports_a_failing_run_and_reruns_only_it(tmp_path):
  python = _fake_python(tmp_path, fail_on="--config.seed=1")
  out = tmp_path / "sweep"
  args = ("--config=configs/pe.py:size=tiny", "--grid=pe=rope;seed=0,1,2", f"--out={out}",
          f"--python={python}")
  result = _sweep(*args)
  assert result.returncode == 1
  assert "1 of 3 runs failed: pe-rope_seed-1" in result.stderr
  assert "loss became nan" in result.stderr  # the failed run's log tail is shown
  spec = json.loads((out / "sweep.json").read_text())
  assert spec["config"] == "configs/pe.py:size=tiny"
  assert spec["grid"] == {"pe": ["rope"], "seed": ["0", "1", "2"]}
  runs = spec["runs"]
  assert [(r["name"], r["status"], r["returncode"]) for r in runs] == [
      ("pe-rope_seed-0", "done", 0), ("pe-rope_seed-1", "failed", 7),
      ("pe-rope_seed-2", "done", 0)]  # the sweep went on after the failure
  assert [r["args"] for r in runs] == [{"pe": "rope", "seed": s} for s in "012"]
  assert all(r["workdir"] == str(out / r["name"]) for r in runs)
  assert shlex.split(runs[1]["command"])[0] == str(python)
  assert (out / "logs" / "pe-rope_seed-1.log").read_text() == "loss became nan\n"
  assert len(_calls(tmp_path)) == 3

  result = _sweep(*args)  # runs already done are skipped; the failed one is retried
  assert result.returncode == 1 and len(_calls(tmp_path)) == 4
  assert "--config.seed=1" in _calls(tmp_path)[-1]


@pytest.mark.parametrize("retries, failures, code, status, attempts", [
    (2, 2, 9, "done", 3),    # the third attempt trains
    (1, 2, 9, "failed", 2),  # out of retries: failed, as without them
    (2, 1, 3, "failed", 1),  # diverged: another attempt would diverge again
    (2, 1, 4, "failed", 1),  # a training question that cannot be made: it would again
    (2, 1, 143, "failed", 1),  # the run itself was sent SIGTERM
])
def test_retries_start_a_failed_run_again(tmp_path, retries, failures, code, status, attempts):
  python = _flaky_python(tmp_path, fail_on="--config.seed=1", failures=failures, status=code)
  out = tmp_path / "sweep"
  result = _sweep("--config=configs/pe.py:size=tiny", "--grid=pe=rope;seed=0,1", f"--out={out}",
                  f"--python={python}", f"--retries={retries}")
  assert result.returncode == (0 if status == "done" else 1), result.stderr
  runs = json.loads((out / "sweep.json").read_text())["runs"]
  assert [(r["status"], r["attempts"]) for r in runs] == [("done", 1), (status, attempts)]
  assert runs[1]["returncode"] == (0 if status == "done" else code)
  assert [c.count("--config.seed=1") for c in _calls(tmp_path)] == [0] + [1] * attempts
  log = (out / "logs" / "pe-rope_seed-1.log").read_text()
  assert log.count("--- attempt ") == attempts - 1
  assert "worker died 1" in log and f"worker died {min(failures, attempts)}" in log
  assert ("attempt 1 failed (exit status 9); starting it again" in result.stderr) == (
      attempts > 1)
  assert ("trained" in log) == (status == "done")


def _gone(pid: int) -> bool:
  """Whether a process has ended (a zombie waiting for its reaper counts as ended)."""
  try:
    return pathlib.Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] == "Z"
  except FileNotFoundError:
    return True


@pytest.mark.parametrize("code", [0, 9])
def test_what_a_run_leaves_behind_ends_with_it(tmp_path, code):
  """A trainer whose data workers outlive it (here a background `sleep`): the sweep kills them
  when the run's main process ends, whether it succeeded or failed."""
  python = tmp_path / "leaky_python"
  python.write_text(f"""#!/usr/bin/env bash
sleep 300 &
echo $! > {tmp_path}/worker
exit {code}
""")
  python.chmod(0o755)
  _sweep("--config=configs/pe.py:size=tiny", "--grid=pe=rope", f"--out={tmp_path / 'sweep'}",
         f"--python={python}")
  worker = int((tmp_path / "worker").read_text())
  deadline = time.time() + 10
  while not _gone(worker) and time.time() < deadline:
    time.sleep(0.05)
  assert _gone(worker)


def test_negative_retries_are_a_usage_error(tmp_path):
  result = _sweep("--config=configs/pe.py:size=tiny", "--grid=pe=rope",
                  f"--out={tmp_path / 'sweep'}", "--python=py", "--retries=-1")
  assert result.returncode == 2 and "--retries=-1: give 0 or more" in result.stderr


def test_slurm_dry_run_writes_a_job_array_that_runs_each_run(tmp_path):
  python = _fake_python(tmp_path, fail_on="never")
  out = tmp_path / "sweep"
  result = _sweep("--config=configs/pe.py:size=tiny", "--grid=pe=rope,alibi", f"--out={out}",
                  f"--python={python}", "--runner=slurm", "--dry_run", "--max_parallel=1",
                  "--sbatch_args=--partition=gpu --gpus=1")
  assert result.returncode == 0, result.stderr
  script = out / "sweep.sbatch"
  assert result.stdout.strip() == (
      f"sbatch --parsable --partition=gpu --gpus=1 {script}")
  assert "#SBATCH --array=0-1%1" in script.read_text()
  assert [r["status"] for r in json.loads((out / "sweep.json").read_text())["runs"]] == [
      "pending", "pending"]
  env = dict(os.environ, SLURM_ARRAY_TASK_ID="1")
  subprocess.run(["bash", str(script)], env=env, check=True, timeout=60)
  (call,) = _calls(tmp_path)
  assert "--config=configs/pe.py:size=tiny,pe=alibi" in call.split()
  assert (out / "logs" / "pe-alibi.log").read_text() == "trained\n"


def test_sigterm_interrupts_the_run_and_a_rerun_resumes_it(tmp_path):
  """`timeout` / a scheduler stops the sweep: the trainer is stopped, its time recorded; the
  rerun starts it again (the trainer resumes its workdir), appending to its log."""
  pid_file = tmp_path / "trainer.pid"
  python = tmp_path / "slow_python"
  python.write_text(f"""#!/usr/bin/env bash
echo "attempt log line"
if [ ! -e {pid_file} ]; then echo $$ > {pid_file}; exec sleep 60; fi
echo "trained"
""")
  python.chmod(0o755)
  out = tmp_path / "sweep"
  args = [sys.executable, str(SWEEP), "--config=configs/pe.py:size=tiny", "--grid=pe=rope",
          f"--out={out}", f"--python={python}"]
  proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
  deadline = time.monotonic() + 60
  while not pid_file.exists() or not pid_file.read_text().strip():
    assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
    time.sleep(0.1)
  trainer = int(pid_file.read_text())
  time.sleep(1.0)
  proc.terminate()
  proc.send_signal(signal.SIGTERM)  # `timeout` signals twice (child, then its group)
  _, stderr = proc.communicate(timeout=60)
  assert proc.returncode == 143 and "interrupted by SIGTERM after" in stderr, stderr
  assert "Traceback" not in stderr
  (run,) = json.loads((out / "sweep.json").read_text())["runs"]
  assert run["status"] == "interrupted" and run["attempts"] == 1 and run["seconds"] >= 1.0
  first_seconds = run["seconds"]
  with pytest.raises(ProcessLookupError):  # the trainer was stopped too
    os.kill(trainer, 0)

  result = _sweep(*args[2:])
  assert result.returncode == 0, result.stderr
  (run,) = json.loads((out / "sweep.json").read_text())["runs"]
  assert run["status"] == "done" and run["attempts"] == 2
  assert run["seconds"] >= first_seconds
  log = (out / "logs" / "pe-rope.log").read_text().splitlines()
  assert log[0] == "attempt log line" and log[1].startswith("--- attempt 2 (")
  assert log[2:] == ["attempt log line", "trained"]


def _checkpointing_trainer(tmp_path: pathlib.Path, finishes: bool = False) -> pathlib.Path:
  """A trainer stand-in that records every SIGTERM / SIGINT it receives and, after the first,
  takes a second to "save its checkpoint" before exiting as the trainer does (143 / 130); with
  `finishes`, it ends its run in that second instead and exits 0."""
  path = tmp_path / "checkpointing_trainer"
  path.write_text(f"""#!{sys.executable}
import os, pathlib, signal, sys, time
here = pathlib.Path({str(tmp_path)!r})
got = []
def record(signum, frame):
  with open(here / "signals", "a") as f:
    f.write(signal.Signals(signum).name + "\\n")
  got.append(signum)
signal.signal(signal.SIGTERM, record)
signal.signal(signal.SIGINT, record)
(here / "ready").write_text(str(os.getpid()))
while not got:
  time.sleep(0.05)
time.sleep(1.0)
(here / "saved").write_text("")
sys.exit(0 if {finishes} else 143 if got[0] == signal.SIGTERM else 130)
""")
  path.chmod(0o755)
  return path


def _wait_for_the_run(tmp_path: pathlib.Path, proc: subprocess.Popen) -> None:
  deadline = time.monotonic() + 90
  while not (tmp_path / "ready").exists():
    if time.monotonic() > deadline or proc.poll() is not None:
      proc.kill()
      pytest.fail(f"the run did not start: {proc.communicate(timeout=30)}")
    time.sleep(0.1)


def _kill_group(pid: int) -> None:
  try:
    os.killpg(pid, signal.SIGKILL)
  except ProcessLookupError:
    pass


def _paper_sweep_command(tmp_path: pathlib.Path, out: pathlib.Path) -> list[str]:
  """docs/results/paper_sweep.sh (a wrapper that runs the sweep as its child) on a tiny recipe."""
  return [str(ROOT / "docs" / "results" / "paper_sweep.sh"), "small_dataset_full", str(out),
          f"--python={_checkpointing_trainer(tmp_path)}"]


@pytest.mark.parametrize("how, sent, status", [
    ("timeout", "SIGTERM", 143), ("ctrl_c", "SIGINT", 130), ("hangup", "SIGTERM", 129),
    ("timeout_around_a_wrapper", "SIGTERM", 143)])
def test_a_stop_reaches_the_run_once_and_waits_for_its_checkpoint(tmp_path, how, sent, status):
  """`timeout` signals its child and then the child's process group, a terminal's Ctrl-C the
  whole foreground group, a closed terminal hangs up on the sweep alone (the run has a session
  of its own), a wrapping script forwards what it gets. The run must still see the stop once
  (a trainer takes a second signal as "stop now, without the checkpoint"), and the command must
  not return before the run has saved."""
  out = tmp_path / "sweep"
  env = dict(os.environ, PYTHON=sys.executable, ARGS="size=tiny", TASKS="add_int", PES="rope",
             SEEDS="0")
  if how == "timeout_around_a_wrapper":
    command = _paper_sweep_command(tmp_path, out)
  else:
    command = [sys.executable, str(SWEEP), "--config=configs/pe.py:size=tiny", "--grid=pe=rope",
               f"--out={out}", f"--python={_checkpointing_trainer(tmp_path)}"]
  if how.startswith("timeout"):
    command = ["timeout", "-s", "TERM", "600", *command]
  # A terminal's group of its own: its Ctrl-C and hangup reach it wherever pytest runs.
  proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, start_new_session=True,
                          preexec_fn=launch_testing.as_from_a_terminal)
  try:
    _wait_for_the_run(tmp_path, proc)
    if how == "ctrl_c":
      os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends
    elif how == "hangup":
      proc.send_signal(signal.SIGHUP)
    else:
      proc.send_signal(signal.SIGTERM)  # `timeout` relays it to its child, then to the group
    _, stderr = proc.communicate(timeout=120)
    assert (tmp_path / "saved").exists(), stderr  # saved before the command returned
    assert (tmp_path / "signals").read_text().split() == [sent]
    assert proc.returncode == status, stderr
    (run,) = json.loads((out / "sweep.json").read_text())["runs"]
    assert run["status"] == "interrupted", run
  finally:
    _kill_group(proc.pid)
    if (tmp_path / "ready").exists():
      _kill_group(int((tmp_path / "ready").read_text()))  # the run's own session


def test_a_run_that_finishes_while_it_stops_is_done(tmp_path):
  """A stop that comes as the run ends (in its final evaluation, say) must not record the
  finished run as interrupted: collecting would skip it, a rerun would repeat its end."""
  out = tmp_path / "sweep"
  command = [sys.executable, str(SWEEP), "--config=configs/pe.py:size=tiny", "--grid=pe=rope",
             f"--out={out}", f"--python={_checkpointing_trainer(tmp_path, finishes=True)}"]
  proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, start_new_session=True)
  try:
    _wait_for_the_run(tmp_path, proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr  # its only run is done: nothing is left to resume
    (run,) = json.loads((out / "sweep.json").read_text())["runs"]
    assert run["status"] == "done" and run["returncode"] == 0, run
  finally:
    _kill_group(proc.pid)
    if (tmp_path / "ready").exists():
      _kill_group(int((tmp_path / "ready").read_text()))


def test_a_name_rerun_with_another_command_does_not_resume_the_old_workdir(tmp_path):
  python = _fake_python(tmp_path, fail_on="never")
  out = tmp_path / "sweep"
  common = ("--config=configs/pe.py:size=tiny", "--grid=pe=rope", f"--out={out}",
            f"--python={python}")
  assert _sweep(*common, "--config.train.steps=5").returncode == 0
  (out / "pe-rope").mkdir()  # what the first command's trainer left
  for _ in range(2):  # refused, and refused again on a rerun of the new command
    result = _sweep(*common, "--config.train.steps=9")
    assert result.returncode == 1 and "holds a run of another command" in result.stderr
    assert "Traceback" not in result.stderr
    assert "1 of 1 runs failed: pe-rope (refused)" in result.stderr
    assert len(_calls(tmp_path)) == 1  # the changed run did not start
    (run,) = json.loads((out / "sweep.json").read_text())["runs"]
    assert run["status"] == "refused" and "--config.train.steps=9" in run["command"]
  (out / "pe-rope").rename(tmp_path / "moved_away")
  assert _sweep(*common, "--config.train.steps=9").returncode == 0
  assert "--config.train.steps=9" in _calls(tmp_path)[-1]
  (run,) = json.loads((out / "sweep.json").read_text())["runs"]
  assert run["status"] == "done" and "workdir_command" not in run


@pytest.mark.parametrize("args, message", [
    (["--grid=pe=rope,nope", "--config.train.stepz=5"],
     "error: run pe-rope: config has no field train.stepz; did you mean train.steps?"),
    (["--grid=train.learning_rate=1e-3;train.stepz=5,9"],
     "error: run train.learning_rate-1e-3_train.stepz-5: config has no field train.stepz; "
     "did you mean train.steps?"),
    (["--grid=pe=rope;seed=0,x"],
     "error: run pe-rope_seed-x: flag --config.seed=x: invalid literal for int()"),
    (["--grid=size=tiny,tinyy"],
     "error: run size-tinyy: --config=configs/pe.py:size=tinyy: unknown size 'tinyy'"),
])
def test_a_config_typo_refuses_the_whole_sweep_before_any_run(tmp_path, args, message):
  python = _fake_python(tmp_path, fail_on="never")
  out = tmp_path / "sweep"
  result = _sweep("--config=configs/pe.py", f"--out={out}", f"--python={python}", *args)
  assert result.returncode == 2 and result.stderr.splitlines() == [result.stderr.strip()]
  assert result.stderr.startswith(message), result.stderr
  assert not _calls(tmp_path) and not out.exists()


def test_an_out_that_is_a_file_is_refused(tmp_path):
  python = _fake_python(tmp_path, fail_on="never")
  out = tmp_path / "sweep"
  out.write_text("")
  result = _sweep("--config=configs/pe.py:size=tiny", "--grid=pe=rope", f"--out={out}",
                  f"--python={python}")
  assert result.returncode == 2
  assert result.stderr == f"error: --out {out} is a file; give a directory\n"
  assert not _calls(tmp_path)
