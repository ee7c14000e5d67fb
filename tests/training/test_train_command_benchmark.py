"""benchmarks/benchmark_train_command.py: its steady-throughput arithmetic, and a CPU smoke run
of the real training command next to the step-only figure."""
import argparse
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

import training_testing  # the micro model

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "benchmark_train_command.py"


def _module():
  spec = importlib.util.spec_from_file_location("benchmark_train_command", SCRIPT)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_steady_throughput_leaves_out_the_first_interval_and_weighs_by_time():
  records = [
      {"step": 5, "samples_seen": 160, "samples_per_s": 10.0, "data_wait_fraction": 0.9},
      {"event": "resume", "step": 5},
      {"step": 10, "samples_seen": 320, "samples_per_s": 100.0, "data_wait_fraction": 0.5},
      {"step": 15, "samples_seen": 480, "samples_per_s": 50.0, "data_wait_fraction": 0.2},
  ]
  # 160 samples in 1.6 s and 160 in 3.2 s: 320 / 4.8 s; wait (1.6 x 0.5 + 3.2 x 0.2) / 4.8.
  assert _module().steady_throughput(records) == {
      "samples_per_s": 67, "data_wait_fraction": 0.3, "intervals": 2}
  with pytest.raises(ValueError, match="at least 2 x --log_every"):
    _module().steady_throughput(records[:2])


def test_times_the_command_and_the_step_of_a_recipe_on_cpu(tmp_path):
  """`--config` times a recipe (the paper's rope_perf table at the tiny preset, a smaller
  batch): the command and the step-only figure run the same config."""
  env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu",
             XLA_FLAGS="--xla_backend_optimization_level=0")
  out = tmp_path / "results.jsonl"
  spec = "configs/paper.py:table=rope_perf,task=add_int,size=tiny"
  # The micro model's one narrow layer: the command and the step compile in seconds.
  small = [f"--override={item}" for item in training_testing.MICRO_MODEL]
  result = subprocess.run(
      [sys.executable, str(SCRIPT), f"--config={spec}", "--steps=10", "--log_every=5",
       "--step_steps=2", "--override=train.batch_size=64", *small, f"--json={out}",
       f"--workdir={tmp_path / 'run'}"],
      cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-4000:]
  run, step = [json.loads(line) for line in out.read_text().splitlines()]
  assert run["impl"] == "train_command" and step["impl"] == "nupa_jax"
  assert run["config"] == step["config"] == spec and "size" not in run
  assert run["intervals"] == 1 and run["samples_per_s"] > 0 and step["samples_per_s"] > 0
  assert 0.0 <= run["data_wait_fraction"] <= 1.0
  assert run["steps_per_call"] == 1  # the automatic count, resolved for one CPU device
  assert step["batch"] == 64  # the override reached the step as well as the command
  assert run["overrides"] == step["overrides"] == ["train.batch_size=64",
                                                   *training_testing.MICRO_MODEL]
  written = json.loads((tmp_path / "run" / "config.json").read_text())
  assert (written["train"]["batch_size"], written["model"]["hidden"]) == (64, 32)
  assert f"--config={ROOT / 'configs' / 'paper.py'}:table=rope_perf" in result.stderr
  records = (tmp_path / "run" / "train_metrics.jsonl").read_text().splitlines()
  assert [r["step"] for r in map(json.loads, records) if "event" not in r] == [5, 10]
  assert "python -m nupa_jax.train (after the 1st log)" in result.stdout
  assert "train step only (benchmark_train.py)" in result.stdout
  assert "command / step" in result.stdout


def test_without_a_config_the_pe_family_is_timed_from_any_directory(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  args = argparse.Namespace(config="", pe="nope", task="add_float", size="tiny")
  assert _module().config_spec(args) == (
      f"{ROOT / 'configs' / 'pe.py'}:pe=nope,task=add_float,size=tiny")


def test_refuses_an_existing_workdir(tmp_path):
  result = subprocess.run([sys.executable, str(SCRIPT), f"--workdir={tmp_path}"],
                          env=dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu"),
                          capture_output=True, text=True, timeout=120)
  assert result.returncode != 0 and "would resume the run in it" in result.stderr


def _stand_in(module, monkeypatch, code: str):
  """The module with its training command replaced by a Python one-liner."""
  monkeypatch.setattr(module, "command", lambda *_: [sys.executable, "-c", code])
  return argparse.Namespace(steps=10, log_every=5, override=[], timeout=0)


def test_a_command_past_its_timeout_is_stopped_and_reported_with_its_output(tmp_path,
                                                                           monkeypatch):
  module = _module()
  args = _stand_in(module, monkeypatch,
                   "import time; print('compiling the step', flush=True); time.sleep(120)")
  args.timeout = 3
  workdir = tmp_path / "run"
  with pytest.raises(SystemExit) as stop:
    module.time_command(args, "unused", workdir)
  message = str(stop.value)
  assert "did not finish in --timeout=3 s (no step logged)" in message
  assert "compiling the step" in message  # the output so far, read back from the log
  assert (tmp_path / "run.log").read_text() == "compiling the step\n"


def test_a_failed_command_is_reported_with_how_far_it_got(tmp_path, monkeypatch):
  module = _module()
  workdir = tmp_path / "run"
  workdir.mkdir()
  (workdir / "train_metrics.jsonl").write_text('{"step": 5}\n')
  args = _stand_in(module, monkeypatch, "import sys; print('out of memory'); sys.exit(3)")
  with pytest.raises(SystemExit) as stop:
    module.time_command(args, "unused", workdir)
  assert "failed with status 3 (step 5)" in str(stop.value)
  assert "out of memory" in str(stop.value)


def test_a_stopped_command_that_logged_two_intervals_reports_its_rate_so_far(tmp_path,
                                                                            monkeypatch):
  """Stopped after its last step (in its final validation, say), the command's steady rate is
  still in the message: 80 samples in 80 / 40 = 2 s after the first log, 40 samples/s, a
  quarter of it waiting for data."""
  module = _module()
  workdir = tmp_path / "run"
  workdir.mkdir()
  (workdir / "train_metrics.jsonl").write_text(
      '{"step": 5, "samples_seen": 80, "samples_per_s": 10.0, "data_wait_fraction": 0.5}\n'
      '{"step": 10, "samples_seen": 160, "samples_per_s": 40.0, "data_wait_fraction": 0.25}\n'
      '{"step": 10, "samp')  # torn by the stop
  args = _stand_in(module, monkeypatch, "import time; time.sleep(120)")
  args.timeout = 2
  with pytest.raises(SystemExit) as stop:
    module.time_command(args, "unused", workdir)
  assert ("did not finish in --timeout=2 s (step 10; 40 samples/s after the first log, "
          "data wait 25%)") in str(stop.value)
