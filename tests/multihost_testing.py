"""Test scripts started as separate jax processes on this machine: fake CPU devices, processes
joined through a local coordinator port; each script prints one JSON line as its result."""
import json
import os
import pathlib
import socket
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def free_port() -> int:
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def launch(script: pathlib.Path, *args) -> subprocess.Popen:
  """`python script args...` with the script's folder and the repository importable."""
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(script.parent), str(ROOT)]))
  env.pop("XLA_FLAGS", None)
  return subprocess.Popen([sys.executable, str(script), *map(str, args)], cwd=script.parent,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result(process: subprocess.Popen) -> dict:
  """The script's last printed line, as JSON; the script must have succeeded."""
  out, err = process.communicate(timeout=240)
  assert process.returncode == 0, err[-3000:]
  return json.loads(out.strip().splitlines()[-1])
