"""launch/local.sh runs one multi-process JAX job on this machine, and fails fast.

Two CPU processes of two fake devices each join through nupa_jax.distributed and sum a global
array over all four devices (cross_process_sum.py); when one process fails, local.sh reports
that process and stops the other, which would otherwise wait for its peer in the collective.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
LOCAL_SH = ROOT / "launch" / "local.sh"


def _local_sh(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
  env = dict(os.environ, PYTHON=sys.executable,
             PYTHONPATH=os.pathsep.join([str(HERE), str(ROOT)]))
  env.pop("XLA_FLAGS", None)
  return subprocess.run([str(LOCAL_SH), *args], cwd=HERE, env=env, capture_output=True,
                        text=True, timeout=timeout, check=False)


def test_two_processes_sum_across_all_devices():
  result = _local_sh("-n", "2", "-d", "2", "-p", "cpu", "-m", "cross_process_sum")
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  lines = {m.group(1): json.loads(m.group(2))
           for m in re.finditer(r"^\[p(\d)\] (\{.*\})$", result.stdout, re.M)}
  # Process p puts p + 1 on each of its 2 devices: 2 * 1 + 2 * 2.
  assert lines == {str(p): {"process": p, "processes": 2, "devices": 4, "sum": 6,
                            "source": "explicit"} for p in (0, 1)}


def test_a_failing_process_stops_the_run():
  result = _local_sh("-n", "2", "-d", "1", "-p", "cpu", "-m", "cross_process_sum", "--",
                     "fail")
  assert result.returncode != 0
  assert "[p1] RuntimeError: process 1 fails on purpose" in result.stdout
  # Process 1 is reported first: it exited at once instead of waiting for process 0 at JAX's
  # shutdown barrier (which only gloo's timeout in process 0 would have ended).
  assert re.search(r"local\.sh: process 1 exited with status \d+; stopping the others",
                   result.stderr), result.stderr


def test_usage_errors_name_the_fix():
  result = _local_sh("-d", "2")
  assert result.returncode == 2 and "-n N: a positive number of processes" in result.stderr
  result = _local_sh("-n", "2", "-p", "tpu")
  assert result.returncode == 2 and "-p tpu: expected cpu or gpu" in result.stderr
