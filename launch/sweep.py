"""An ablation grid as one folder of runs: run here one after another, on SLURM, or printed.

    python launch/sweep.py --config=configs/pe.py[:size=tiny] \\
        --grid "pe=rope,nope,alibi;task=add_int,add_float;seed=0,1,2" \\
        [--runner local|slurm|print] [--out SWEEP_DIR] [--python PY] [--retries N] \\
        [--config.a.b=v ...]

The grid is the product of its `key=v1,v2,...` groups (`;`-separated), in the order given.
A key is one of:
  - a config argument of the family (`pe`, `task`, `size`): appended to --config's argument
    string (`configs/pe.py:size=tiny,pe=rope,task=add_int`);
  - `seed`: the run's seed, `--config.seed=N` (model init and data);
  - a dotted config field (`train.learning_rate`): `--config.train.learning_rate=V`.
Extra `--config.a.b=v` flags go to every run. Each run trains in SWEEP_DIR/NAME (NAME built
from its grid values, e.g. `pe-rope_task-add_int_seed-0`) with `PY -m nupa_jax.train`.

Every run's config is built first, as its trainer will build it: a config argument the family
rejects or an override of a field that does not exist refuses the whole sweep, before any run
starts, with one line naming the fix and exit status 2 (as every usage error).

SWEEP_DIR/sweep.json records the sweep for the report tool (`python -m nupa_jax.report
--workdirs SWEEP_DIR`): {"config", "grid", "overrides", "runner", "runs": [{"name", "workdir",
"args", "command", "status", ...}]}.
Runners:
  local  runs them one after another, output in SWEEP_DIR/logs/NAME.log, status (done /
         failed / interrupted) saved after each; a failed run does not stop the sweep, but is
         listed at the end and makes the exit status 1. Rerunning skips runs already done and
         resumes the others from their checkpoints (the trainer resumes a workdir), appending
         to their logs; `seconds` adds up every attempt's wall time. `--retries N` starts a
         failed run again at once, up to N times, resuming from its last checkpoint if it
         saved one (a worker that died, a device error), but not one that cannot end
         otherwise (a usage or config error, a diverged loss, a training question that
         cannot be made, a signal sent to the run itself); each attempt is marked in its
         log and counted in `attempts`. A run whose name this folder ran before with
         another command is refused while its workdir exists (status refused, counted with
         the failed runs).
         SIGTERM, SIGHUP or Ctrl-C stops the run in progress (marked interrupted, its time
         so far recorded) and the sweep, with exit status 128 + the signal's number (143,
         129, 130); one that the sweep started with ignored (`nohup`) stays ignored. The
         run has a session of its own, and the sweep passes the stop on to its main process
         once (Ctrl-C as SIGINT, the others as SIGTERM): a trainer takes a second signal as
         "stop now, without the checkpoint", and a terminal's Ctrl-C or `timeout` (the
         child, then its group) would otherwise deliver two. Repeats are ignored while the
         sweep waits up to STOP_GRACE_S for the run's last checkpoint; then it kills the
         run's process group. A scheduler that signals every process of a job (SLURM,
         systemd) reaches the run as well, which then gets the stop twice: under SLURM use
         the slurm runner. A sweep killed with SIGKILL leaves its run going.
  slurm  writes SWEEP_DIR/sweep.sbatch, a job array with one task per run, and submits it
         (`--sbatch_args`, `--max_parallel`; `--dry_run` prints the sbatch command instead).
  print  prints the commands, one per line, and writes nothing.
"""
from __future__ import annotations

import itertools
import json
import os
import pathlib
import re
import shlex
import signal
import subprocess
import sys
import time

# The runs import the project and its configs from the current directory (`python -m
# nupa_jax.train`); so does the check of their configs before any of them starts.
sys.path.insert(0, os.getcwd())
from nupa_jax import cli  # pylint: disable=wrong-import-position

SEED_FLAGS = ("--config.seed",)
SWEEP_FILE = "sweep.json"
# How long a stopped run may take to save its checkpoint and exit before it is killed.
STOP_GRACE_S = 300
# Signals that stop a sweep: Ctrl-C, a scheduler's time limit or `timeout`, a closed terminal.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Exit statuses of a run that another attempt would end the same way: a usage or config error,
# a diverged loss, a training question that cannot be made, a stop sent to the run's own
# processes.
FINAL_STATUSES = frozenset({cli.USAGE, cli.DIVERGED, cli.DATA_ERROR} |
                           {128 + s for s in STOP_SIGNALS})
_SAFE = re.compile(r"[^A-Za-z0-9._+-]")


def parse_grid(text: str) -> dict[str, list[str]]:
  """`"a=1,2;b=x"` -> {"a": ["1", "2"], "b": ["x"]} (order kept; errors name the fix)."""
  grid = {}
  for group in filter(None, (g.strip() for g in text.split(";"))):
    key, sep, values = group.partition("=")
    key = key.strip()
    values = [v.strip() for v in values.split(",")]
    if not sep or not key or not all(values):
      raise ValueError(f"grid group {group!r} is not of the form key=value1,value2,...")
    if key in grid:
      raise ValueError(f"grid key {key!r} appears twice; list all its values in one group")
    if len(set(values)) != len(values):
      raise ValueError(f"grid key {key!r} repeats a value: {','.join(values)}")
    grid[key] = values
  if not grid:
    raise ValueError("--grid is empty; e.g. --grid \"pe=rope,nope;seed=0,1\"")
  return grid


def expand(config: str, grid: dict[str, list[str]], overrides: list[str], out: str,
           python: str) -> list[dict]:
  """One run per point of the grid: name, workdir, args (the grid values), argv, command."""
  path, _, fixed = config.partition(":")
  fixed_keys = {item.partition("=")[0].strip() for item in fixed.split(",") if item}
  clash = sorted(fixed_keys & set(grid))
  if clash:
    raise ValueError(f"grid keys {clash} are also fixed in --config={config}; keep each in "
                     "one place")
  runs, names = [], set()
  for values in itertools.product(*grid.values()):
    args = dict(zip(grid, values))
    name = "_".join(f"{k}-{_SAFE.sub('-', v)}" for k, v in args.items())
    if name in names:
      raise ValueError(f"two grid points share the run name {name!r}; make the values differ "
                       "in letters, digits or ._+-")
    names.add(name)
    config_args = [item for item in fixed.split(",") if item]
    flags = []
    for key, value in args.items():
      if key == "seed":
        flags += [f"{flag}={value}" for flag in SEED_FLAGS]
      elif "." in key:
        flags.append(f"--config.{key}={value}")
      else:
        config_args.append(f"{key}={value}")
    workdir = os.path.join(out, name)
    config_flag = f"--config={path}" + (f":{','.join(config_args)}" if config_args else "")
    argv = [python, "-m", "nupa_jax.train", config_flag, f"--workdir={workdir}", *flags,
            *overrides]
    runs.append({"name": name, "workdir": workdir, "args": args, "argv": argv,
                 "command": shlex.join(argv)})
  return runs


def check_configs(runs: list[dict]) -> None:
  """Builds every run's config as its trainer will (config arguments, then overrides), so that
  a typo refuses the whole sweep before any run starts."""
  for run in runs:
    config_args = [arg for arg in run["argv"][3:] if not arg.startswith("--workdir=")]
    try:
      cli.check_config_args(config_args)
    except cli.UsageError as e:
      raise cli.UsageError(f"run {run['name']}: {e}") from e


class Sweep:
  """The sweep folder and its sweep.json, saved after every status change."""

  def __init__(self, out: pathlib.Path, spec: dict, runs: list[dict]):
    self.out = out
    self.spec = spec
    self.runs = [{k: v for k, v in r.items() if k != "argv"} | {"status": "pending"}
                 for r in runs]
    self.argv = {r["name"]: r["argv"] for r in runs}
    # Runs whose name an earlier sweep in this folder used with another command -> that
    # command: their workdir, if any, holds its run, which the trainer would resume.
    self.changed: dict[str, str] = {}
    previous = out / SWEEP_FILE
    if previous.is_file():  # keep what an earlier sweep with the same commands finished
      earlier = {r.get("name"): r for r in json.loads(previous.read_text()).get("runs", [])}
      for run in self.runs:
        old = earlier.get(run["name"])
        if old is None:
          continue
        workdir_command = old.get("workdir_command", old.get("command"))
        if workdir_command != run["command"]:
          self.changed[run["name"]] = workdir_command
        elif old.get("status") == "done":
          run.update(old)
        else:  # an unfinished attempt: its time still counts towards the run's cost
          run.update({k: old[k] for k in ("seconds", "attempts") if k in old})

  def save(self) -> None:
    self.out.mkdir(parents=True, exist_ok=True)
    tmp = self.out / (SWEEP_FILE + ".tmp")
    tmp.write_text(json.dumps(self.spec | {"runs": self.runs}, indent=2) + "\n")
    tmp.replace(self.out / SWEEP_FILE)

  def log_path(self, name: str) -> pathlib.Path:
    return self.out / "logs" / f"{name}.log"


class _Interrupted(Exception):
  """A stop signal arrived while the sweep was waiting on a run."""


class _Stop:
  """The first stop signal, recorded at once, its repeats ignored from then on (`timeout`
  signals its child and then the child's group). It interrupts only the wait on a run; one
  that comes while a run starts or between runs is seen by the checks around them."""

  def __init__(self):
    self.signum: int | None = None
    self.waiting = False
    self._previous = {}

  def __enter__(self) -> _Stop:
    for signum in STOP_SIGNALS:
      if signal.getsignal(signum) is not signal.SIG_IGN:  # `nohup`: keep ignoring it
        self._previous[signum] = signal.signal(signum, self._handle)
    return self

  def __exit__(self, *exc) -> None:
    if self.signum is None:  # after a stop, repeats stay ignored while the sweep exits
      for signum, handler in self._previous.items():
        signal.signal(signum, handler)

  def _handle(self, signum, frame) -> None:
    del frame
    for repeat in self._previous:
      signal.signal(repeat, signal.SIG_IGN)
    self.signum = signum
    if self.waiting:
      raise _Interrupted

  @property
  def exit_status(self) -> int:
    return 128 + self.signum

  @property
  def name(self) -> str:
    return signal.Signals(self.signum).name


def _run_attempt(argv: list[str], log: pathlib.Path, stop: _Stop) -> int | None:
  """Runs one attempt of a run, output appended to `log`, in a session (process group) of its
  own; its exit status, or None if the sweep was stopped first (the run then stopped too).
  What the run's main process leaves behind in its group (the data workers of a trainer that
  crashed) is killed when it ends, so that they hold no device memory a retry or the next run
  needs."""
  with log.open("a") as f:
    proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
  code = _wait_or_stop(proc, stop)
  _kill_group(proc.pid)
  return code


def _wait_or_stop(proc: subprocess.Popen, stop: _Stop) -> int | None:
  """The run's exit status, or None after passing a stop of the sweep on to it: the run then
  stopped early, unless it exits 0 (it finished inside the stop's grace period, e.g. in its
  final evaluation), which is its status as for any finished run."""
  try:
    stop.waiting = True
    if stop.signum is None:  # else the stop came while the run was starting
      return proc.wait()
  except _Interrupted:
    pass
  finally:
    stop.waiting = False
  if proc.poll() is not None:  # it ended before the stop could reach it
    return proc.returncode
  _stop_run(proc, stop.signum)
  return 0 if proc.returncode == 0 else None


def _kill_group(pgid: int) -> None:
  """Kills what is left of a process group. Linux keeps a group's id from being reused while
  any member lives, so after its leader has been reaped this reaches only its own processes."""
  try:
    os.killpg(pgid, signal.SIGKILL)
  except ProcessLookupError:  # nothing left
    pass


def _stop_run(proc: subprocess.Popen, signum: int) -> None:
  """Passes the stop on to the run's main process (a launcher such as launch/local.sh passes it
  on to its own), waits for its checkpoint, and kills its process group after STOP_GRACE_S."""
  proc.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)
  try:
    proc.wait(timeout=STOP_GRACE_S)
  except subprocess.TimeoutExpired:
    _kill_group(proc.pid)
    proc.wait()


def run_local(sweep: Sweep, retries: int = 0) -> int:
  """Runs every run not yet done, in order, each failed one again up to `retries` times; 1 if
  any failed."""
  with _Stop() as stop:
    return _run_all(sweep, stop, retries)


def _attempts(sweep: Sweep, run: dict, log: pathlib.Path, stop: _Stop, retries: int,
              label: str) -> int | None:
  """Runs `run` until it succeeds, fails for good (FINAL_STATUSES) or has failed `retries` + 1
  times, each attempt resuming from the checkpoints of the last; its last exit status, or None
  if the sweep was stopped. Each attempt's time and status are saved as soon as it ends."""
  retry = 0
  while True:
    attempt = run.get("attempts", 0) + 1
    if log.exists() and log.stat().st_size:
      with log.open("a") as f:
        f.write(f"--- attempt {attempt} ({time.strftime('%Y-%m-%d %H:%M:%S')}) ---\n")
    run.update(status="running", log=str(log), attempts=attempt)
    sweep.save()
    start = time.monotonic()
    code = _run_attempt(sweep.argv[run["name"]], log, stop)
    run.update(returncode=code,
               seconds=round(run.get("seconds", 0.0) + time.monotonic() - start, 1))
    sweep.save()
    if code is None:
      return None
    if code != 0:
      tail = log.read_text(errors="replace").splitlines()[-15:]
      print("\n".join(f"    {line}" for line in tail), file=sys.stderr, flush=True)
    if code == 0 or code in FINAL_STATUSES or retry == retries or stop.signum is not None:
      return code
    retry += 1
    print(f"{label}: attempt {attempt} failed (exit status {code}); starting it again, from "
          f"its last checkpoint if it saved one (retry {retry} of {retries})", file=sys.stderr,
          flush=True)


def _run_all(sweep: Sweep, stop: _Stop, retries: int) -> int:
  total = len(sweep.runs)
  for i, run in enumerate(sweep.runs, 1):
    label = f"[{i}/{total}] {run['name']}"
    if stop.signum is not None:  # it came after the last run ended
      print(f"stopped by {stop.name} before {label}; rerun the sweep to go on",
            file=sys.stderr, flush=True)
      raise SystemExit(stop.exit_status)
    if run["status"] == "done":
      print(f"{label}: already done", flush=True)
      continue
    if run["name"] in sweep.changed and pathlib.Path(run["workdir"]).exists():
      run.update(status="refused", returncode=None,
                 workdir_command=sweep.changed[run["name"]])  # refused again on a rerun
      sweep.save()
      print(f"{label}: not run: {run['workdir']} holds a run of another command (this "
            "sweep folder ran the name with different settings); move it away or use "
            "another sweep folder", file=sys.stderr, flush=True)
      continue
    log = sweep.log_path(run["name"])
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"{label}: running (log {log})", flush=True)
    code = _attempts(sweep, run, log, stop, retries, label)
    run["status"] = "interrupted" if code is None else "done" if code == 0 else "failed"
    sweep.save()
    if code is None:
      print(f"{label}: interrupted by {stop.name} after {run['seconds']} s; rerun the sweep "
            "to resume it", file=sys.stderr, flush=True)
      raise SystemExit(stop.exit_status)
    print(f"{label}: {run['status']} in {run['seconds']} s"
          + ("" if code == 0 else f" (exit status {code})"), flush=True)
  failed = [r for r in sweep.runs if r["status"] != "done"]
  if failed:
    print(f"{len(failed)} of {total} runs failed: "
          + ", ".join(f"{r['name']} ({r.get('log') or r['status']})" for r in failed),
          file=sys.stderr)
    return 1
  print(f"all {total} runs done; results in {sweep.out}")
  return 0


def slurm_script(sweep: Sweep, max_parallel: int) -> str:
  """A job array script: task i runs run i, its output in SWEEP_DIR/logs/NAME.log."""
  array = f"0-{len(sweep.runs) - 1}" + (f"%{max_parallel}" if max_parallel else "")
  commands = "\n".join(f"  {shlex.quote(r['command'])}" for r in sweep.runs)
  logs = "\n".join(f"  {shlex.quote(str(sweep.log_path(r['name'])))}" for r in sweep.runs)
  return f"""#!/usr/bin/env bash
#SBATCH --job-name=nupa_sweep
#SBATCH --array={array}
#SBATCH --output={sweep.out / 'logs' / 'slurm-%A_%a.out'}
set -euo pipefail
cd {shlex.quote(os.getcwd())}
commands=(
{commands}
)
logs=(
{logs}
)
task=${{SLURM_ARRAY_TASK_ID:?run this script with sbatch}}
exec >"${{logs[$task]}}" 2>&1
eval "${{commands[$task]}}"
"""


def run_slurm(sweep: Sweep, sbatch_args: list[str], max_parallel: int, dry_run: bool) -> int:
  """Writes SWEEP_DIR/sweep.sbatch and submits it (or prints the sbatch command)."""
  script = sweep.out / "sweep.sbatch"
  (sweep.out / "logs").mkdir(parents=True, exist_ok=True)
  script.write_text(slurm_script(sweep, max_parallel))
  command = ["sbatch", "--parsable", *sbatch_args, str(script)]
  for run in sweep.runs:
    run["log"] = str(sweep.log_path(run["name"]))
  if dry_run:
    sweep.save()
    print(shlex.join(command))
    return 0
  result = subprocess.run(command, capture_output=True, text=True, check=False)
  if result.returncode != 0:
    print(f"sbatch failed (exit status {result.returncode}): {result.stderr.strip()}",
          file=sys.stderr)
    return 1
  job = result.stdout.strip().split(";")[0]
  for i, run in enumerate(sweep.runs):
    run.update(status="submitted", slurm_job=f"{job}_{i}")
  sweep.save()
  print(f"submitted job array {job}: {len(sweep.runs)} runs; logs in {sweep.out / 'logs'}")
  return 0


def main(argv: list[str] | None = None) -> int:
  parser = cli.ArgumentParser(
      description=__doc__.split("\n\n", 1)[0],
      epilog="Extra --config.a.b=v flags are passed to every run.")
  parser.add_argument("--config", required=True, help="configs/FAMILY.py[:fixed=args]")
  parser.add_argument("--grid", required=True, help='"key=v1,v2;key2=..."')
  parser.add_argument("--runner", choices=("local", "slurm", "print"), default="local")
  parser.add_argument("--out", help="sweep folder (default runs/sweep_FAMILY)")
  parser.add_argument("--python", default=os.environ.get("PYTHON", sys.executable),
                      help="interpreter that runs -m nupa_jax.train (default $PYTHON, else "
                           "this one)")
  parser.add_argument("--retries", type=int, default=0,
                      help="local: start a failed run again up to this many times, resuming "
                           "from its last checkpoint (default 0)")
  parser.add_argument("--sbatch_args", default="", help="slurm: options for sbatch")
  parser.add_argument("--max_parallel", type=int, default=0,
                      help="slurm: at most this many array tasks at once (0 = no limit)")
  parser.add_argument("--dry_run", action="store_true",
                      help="slurm: write the script, print the sbatch command, submit nothing")
  args, overrides = parser.parse_known_args(argv)
  bad = [o for o in overrides if not re.match(r"--config\.[\w.]+=", o)]
  if bad:
    parser.error(f"unrecognized arguments {bad}; config overrides are written "
                 "--config.a.b=value")
  if args.retries < 0:
    parser.error(f"--retries={args.retries}: give 0 or more")
  config_file = args.config.partition(":")[0]
  if not pathlib.Path(config_file).is_file():
    parser.error(f"--config={args.config}: no file {config_file} (run from the repository "
                 "root, or give its path)")
  out = args.out or os.path.join("runs", f"sweep_{pathlib.Path(config_file).stem}")
  try:
    grid = parse_grid(args.grid)
    runs = expand(args.config, grid, overrides, out, args.python)
  except ValueError as e:
    parser.error(str(e))
  with cli.usage_errors():
    check_configs(runs)
    if args.runner != "print":
      cli.output_dir(out, "--out")
  if args.runner == "print":
    for run in runs:
      print(run["command"])
    return 0
  sweep = Sweep(pathlib.Path(out),
                {"config": args.config, "grid": grid, "overrides": overrides,
                 "runner": args.runner}, runs)
  if args.runner == "slurm":
    return run_slurm(sweep, shlex.split(args.sbatch_args), args.max_parallel, args.dry_run)
  return run_local(sweep, args.retries)


if __name__ == "__main__":
  sys.exit(main())
