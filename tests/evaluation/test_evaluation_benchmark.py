"""benchmarks/benchmark_evaluation.py runs end to end on CPU: a whole evaluation of two tasks of
both tiers, then each tier alone, in one JSON object."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "benchmark_evaluation.py"


def test_times_a_whole_evaluation_and_each_tier(tmp_path):
  out = tmp_path / "eval.json"
  # Compile times are compared (a tier that compiles nothing against the whole): none may be a
  # load from the compilation cache the tests' processes share (tests/conftest.py).
  env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu",
             JAX_ENABLE_COMPILATION_CACHE="false")
  result = subprocess.run(
      [sys.executable, str(SCRIPT), "--size=tiny", "--tasks=add_int,max_int", "--questions=1",
       "--digits=1,8", f"--out={out}"],
      capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
  assert result.returncode == 0, result.stderr
  report = json.loads(out.read_text())
  assert report == json.loads(result.stdout)
  assert (report["size"], report["questions_per_length"], report["batch_size"]) == ("tiny", 1, 256)
  whole, tiers = report["all"], report["tiers"]
  # add_int is tested at 3..20 digits, max_int at 5..100: one question per length up to 8.
  assert (whole["tasks"], whole["questions"]) == (2, 6 + 4)
  assert {name: (t["tasks"], t["questions"]) for name, t in tiers.items()} == {
      "20": (1, 6), "100": (1, 4)}
  # One batch per task, of 6 rows (add_int's questions) and one size: one program. Alone,
  # add_int reuses it; max_int's batch has 4 rows, a program of its own.
  assert (whole["batches"], whole["rows"], whole["generate_compiles"]) == (2, 6, 1)
  assert [tiers[name]["generate_compiles"] for name in ("20", "100")] == [0, 1]
  # A tier that compiles nothing spends a small part of the whole's compile time (thread
  # start-up, longer on a loaded machine).
  assert whole["compile_wall_s"] > 0
  assert tiers["20"]["compile_wall_s"] < 0.1 * whole["compile_wall_s"]
  for entry in (whole, *tiers.values()):  # both rounded
    assert entry["questions_per_s"] == pytest.approx(entry["questions"] / entry["seconds"],
                                                     rel=0.05)
