"""Global batches over real meshes, in fresh processes: 8 fake devices, and 2 jax processes.

Both runs gather their global jax.Arrays and compare them with the numpy batches a single
process builds, so together they show that the batch does not depend on the device or
process layout (data_multihost_main.py does the checking).
"""
import json
import os
import pathlib
import socket
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
MAIN = HERE / "data_multihost_main.py"


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def _launch(*args) -> subprocess.Popen:
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(HERE.parents[1])]))
  env.pop("XLA_FLAGS", None)
  return subprocess.Popen([sys.executable, str(MAIN), *map(str, args)], cwd=HERE, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(process: subprocess.Popen) -> dict:
  out, err = process.communicate(timeout=240)
  assert process.returncode == 0, err[-3000:]
  return json.loads(out.strip().splitlines()[-1])


def test_global_batches_match_on_8_devices_and_on_2_processes():
  port = _free_port()
  # Started together: the three processes overlap their start-up.
  single = _launch(0, 1, 0, 8, "data=4,fsdp=2", 3)
  pair = [_launch(i, 2, port, 2, "data=4", 3) for i in range(2)]
  assert _result(single) == {"process": 0, "rows": [0, 8], "state": 5}
  # Each process builds only its half of the rows, and both resume from the same state.
  assert [_result(p) for p in pair] == [{"process": 0, "rows": [0, 4], "state": 5},
                                        {"process": 1, "rows": [4, 8], "state": 5}]
