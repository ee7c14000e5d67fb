"""benchmarks/benchmark_generate_compile.py runs end to end on CPU and refuses what it cannot
time (a PE that reads text features)."""
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "benchmark_generate_compile.py"


def _run(*args):
  # The first call is timed as a compile: not one loaded from the compilation cache the tests'
  # processes share (tests/conftest.py).
  env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu",
             JAX_ENABLE_COMPILATION_CACHE="false")
  return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                        env=env, cwd=ROOT, timeout=300)


def test_times_the_first_and_second_generate_call():
  result = _run("--config=configs/beyond.py:pe=fire,size=tiny", "--batch=4", "--prompt_len=8",
                "--max_new_tokens=4")
  assert result.returncode == 0, result.stderr
  assert "posenc fire, batch 4, prompts of 8 tokens, 4 new tokens" in result.stdout
  first, second = map(float, re.search(r"first call \(trace \+ compile \+ run\) ([\d.]+) s, "
                                       r"second \(run\) ([\d.]+) s", result.stdout).groups())
  assert first > second  # the first call compiled


def test_refuses_a_pe_that_reads_text_features():
  result = _run("--config=configs/beyond.py:pe=abacus,size=tiny")
  assert result.returncode != 0
  assert "reads ['digit_index'] per token" in result.stderr
