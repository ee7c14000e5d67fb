"""The queued experiments' sweep files build their runs' configs (launch/sweep.py refuses a
recipe the config family rejects) and print the commands a GPU job would run."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"


@pytest.mark.parametrize("experiment, runs, expected", [
    ("generalist", 1, ["configs/mixed.py:size=100m,samples=16000000,per_length=100,scoring=paper",
                       "--config.data.num_workers=32"]),
    ("rfcot", 2, ["tokenizer=digits,context=4096,samples=150000,answer=rfcot",
                  "tokenizer=digits,context=4096,samples=150000,answer=direct"]),
])
def test_sweep_prints_valid_commands(tmp_path, experiment, runs, expected):
  result = subprocess.run(
      ["bash", str(RESULTS / experiment / "sweep.sh"), str(tmp_path / "sweep"), "--runner",
       "print"], env=dict(os.environ, PYTHON=sys.executable, JAX_PLATFORMS="cpu"),
      capture_output=True, text=True, timeout=120, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  commands = result.stdout.strip().splitlines()
  assert len(commands) == runs
  for text in expected:
    assert any(text in c for c in commands), (text, commands)
  assert all("-m nupa_jax.train" in c for c in commands)
