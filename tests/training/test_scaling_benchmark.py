"""benchmarks/benchmark_scaling.py on fake CPU devices: the mechanics of a strong-scaling
measurement (the global batch fixed across device counts, a named mesh), not a measurement."""
import json
import pathlib
import subprocess
import sys

import pytest

import training_testing  # the micro model

ROOT = pathlib.Path(__file__).resolve().parents[2]
MICRO = [*(f"--config.{item}" for item in training_testing.MICRO_MODEL),
         "--config.data.samples_per_row=4", "--config.data.train_digits=(1,4)",
         "--config.eval.per_length=0"]


def test_strong_scaling_keeps_the_global_batch_and_reports_the_speed_up(tmp_path):
  out = tmp_path / "scaling.json"
  result = subprocess.run(
      [sys.executable, "benchmarks/benchmark_scaling.py", "--platform", "cpu", "--gpus", "1,2",
       "--modes", "process", "--meshes", "zero1", "--global_batch", "16",
       "--config", "configs/pe.py:size=tiny", "--records", "2", "--log_every", "2",
       "--json", str(out), "--", *MICRO],
      cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads(out.read_text())
  assert report["global_batch"] == 16
  runs = report["results"]
  assert [(r["mesh"], r["gpus"], r["batch"]) for r in runs] == [("zero1", 1, 16), ("zero1", 2, 16)]
  for r in runs:
    assert r["speedup"] == pytest.approx(r["tokens_per_s"] / runs[0]["tokens_per_s"])
    assert r["efficiency"] == pytest.approx(r["speedup"] / r["gpus"])
  assert "zero1  process" in result.stdout
  assert report["extra_flags"] == MICRO


def test_gpu_runs_take_the_first_visible_gpus():
  sys.path.insert(0, str(ROOT / "benchmarks"))
  import benchmark_scaling  # pylint: disable=g-import-not-at-top  (not a package)
  assert benchmark_scaling.first_gpus(2, None) == ["0", "1"]
  assert benchmark_scaling.first_gpus(2, "") == ["0", "1"]
  assert benchmark_scaling.first_gpus(1, "3,2") == ["3"]
  assert benchmark_scaling.first_gpus(2, "2, 3") == ["2", "3"]
  with pytest.raises(SystemExit, match="lists 1"):
    benchmark_scaling.first_gpus(2, "3")


def test_cpu_runs_add_their_fake_devices_to_the_xla_flags_given(monkeypatch):
  sys.path.insert(0, str(ROOT / "benchmarks"))
  import benchmark_scaling  # pylint: disable=g-import-not-at-top  (not a package)
  monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
  _, env = benchmark_scaling.command("process", 2, "cpu", [])
  assert env["XLA_FLAGS"] == ("--xla_backend_optimization_level=0 "
                              "--xla_force_host_platform_device_count=2")
  monkeypatch.delenv("XLA_FLAGS")
  _, env = benchmark_scaling.command("process", 4, "cpu", [])
  assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=4"
