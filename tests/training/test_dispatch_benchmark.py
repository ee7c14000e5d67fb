"""benchmarks/benchmark_dispatch.py: a CPU smoke run of both forms of the step."""
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_times_a_call_over_the_state_and_over_its_leaves(tmp_path):
  out = tmp_path / "dispatch.jsonl"
  result = subprocess.run(
      [sys.executable, str(ROOT / "benchmarks" / "benchmark_dispatch.py"), "--size=tiny",
       "--batches=16", "--calls=3", f"--json={out}"],
      cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu"),
      capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  state, leaves = [json.loads(line) for line in out.read_text().splitlines()]
  assert (state["form"], leaves["form"]) == ("state", "leaves")
  for r in (state, leaves):
    assert r["dispatch_us"] > 0 and r["pass_through_us"] > 0 and r["calls"] == 3
    assert r["batch"] == 16 and r["backend"] == "cpu" and r["leaves"] > 10
  assert "us a call (nnx state / its leaves)" in result.stdout
