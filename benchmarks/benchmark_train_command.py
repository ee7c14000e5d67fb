"""The real training command's throughput next to the step's, measured in one call.

`benchmark_train.py` times the jitted train step on batches made beforehand; a researcher runs
`python -m nupa_jax.train`, which also makes its batches as it goes, moves them to the devices,
logs, and checkpoints. This script runs that command as it is (the pe family's defaults, or
the recipe of `--config`, `config.data.num_workers` included) for `--steps` steps, then times
the step alone on the same config with `benchmark_train.time_nupa`, and prints both, so the gap
between them is measured.

The command's samples/s is that of its `train_metrics.jsonl` records after the first (which
holds the compile and the data workers' start-up): all their samples over all their training
time. Its final evaluation is cut to the validation loss (`eval.per_length=0`, no generation;
`eval.every=0`, nothing before the end), which is outside the logged intervals anyway.

  python benchmarks/benchmark_train_command.py --size=100m --steps=600
  python benchmarks/benchmark_train_command.py \
      --config=configs/paper.py:table=rope_perf,task=add_int
  python benchmarks/benchmark_train_command.py --size=tiny --steps=20 --log_every=5 \\
      --step_steps=3                                                  # CPU smoke run
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import jax

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]  # configs/ and benchmark_train
import benchmark_train  # noqa: E402  (touches no device until it times)
from nupa_jax import cli  # noqa: E402
from nupa_jax.report import loading  # noqa: E402
from nupa_jax.training import trainer  # noqa: E402
from nupa_jax.training import writers  # noqa: E402

_STOP_GRACE_S = 60  # after --timeout's SIGTERM: time for the trainer's stop checkpoint


def config_spec(args) -> str:
  """The timed config: `--config`, else the pe family at `--size`, `--pe`, `--task`; its file
  as an absolute path (found from the current directory, else the repository's root)."""
  spec = args.config or f"configs/pe.py:pe={args.pe},task={args.task},size={args.size}"
  file, sep, arguments = spec.partition(":")
  if not pathlib.Path(file).exists():
    file = str(ROOT / file)
  return str(pathlib.Path(file).resolve()) + sep + arguments


def command(spec: str, steps: int, log_every: int, workdir: pathlib.Path,
            overrides: list[str]) -> list[str]:
  """The `python -m nupa_jax.train` command line that is timed."""
  return [sys.executable, "-m", "nupa_jax.train", f"--config={spec}", f"--workdir={workdir}",
          f"--config.train.steps={steps}", f"--config.train.log_every={log_every}",
          "--config.eval.per_length=0", "--config.eval.every=0",
          *(f"--config.{item}" for item in overrides)]


def steady_throughput(records: list[dict]) -> dict:
  """samples/s and mean data wait over the step records after the first: all their samples
  over all their training time (each record's samples / its samples_per_s)."""
  steps = [r for r in records if "event" not in r]
  if len(steps) < 2:
    raise ValueError(f"{len(steps)} logged interval(s): the first holds the compile, so give "
                     "--steps of at least 2 x --log_every")
  later = list(zip(steps, steps[1:]))
  samples = [b["samples_seen"] - a["samples_seen"] for a, b in later]
  seconds = [n / b["samples_per_s"] for n, (_, b) in zip(samples, later)]
  return {"samples_per_s": round(sum(samples) / sum(seconds)),
          "data_wait_fraction": round(sum(w * b["data_wait_fraction"]
                                          for w, (_, b) in zip(seconds, later)) / sum(seconds), 4),
          "intervals": len(later)}


def _tail(path: pathlib.Path, chars: int = 4000) -> str:
  return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def _records(workdir: pathlib.Path) -> list[dict]:
  """The run's train_metrics.jsonl records (none before its first log), less a last line
  torn by a stop."""
  return loading.read_train_log(workdir / writers.METRICS_FILE)


def _progress(workdir: pathlib.Path) -> str:
  """How far a run got: its last logged step and, once it has logged two intervals, its
  steady samples/s so far (a command stopped after its last step, in its final validation or
  checkpoint, still gives its rate); or that it logged none."""
  records = _records(workdir)
  if not records:
    return "no step logged"
  text = f"step {records[-1].get('step')}"
  try:
    rate = steady_throughput(records)
  except ValueError:  # fewer than two intervals
    return text
  return (f"{text}; {rate['samples_per_s']:,d} samples/s after the first log, data wait "
          f"{rate['data_wait_fraction']:.0%}")


def time_command(args, spec: str, workdir: pathlib.Path) -> dict:
  """Runs the training command on config `spec`; its steady throughput from its
  train_metrics.jsonl. The command's output goes to `<workdir>.log` as it runs (kept with
  `--workdir`), so that a command stopped by `--timeout` (SIGTERM, then SIGKILL after
  `_STOP_GRACE_S`) or killed from outside leaves its trace; a failure or a timeout is
  reported with how far the run got and the end of that log."""
  argv = command(spec, args.steps, args.log_every, workdir, args.override)
  print("$ " + " ".join(argv[1:]), file=sys.stderr, flush=True)
  log = workdir.with_name(workdir.name + ".log")
  log.parent.mkdir(parents=True, exist_ok=True)
  start = time.perf_counter()
  with open(log, "w") as out:
    process = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
      returncode = process.wait(timeout=args.timeout or None)
    except subprocess.TimeoutExpired:
      process.terminate()
      try:
        process.wait(timeout=_STOP_GRACE_S)
      except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
      raise SystemExit(f"the training command did not finish in --timeout={args.timeout:g} s "
                       f"({_progress(workdir)}); its output ends:\n{_tail(log)}") from None
  wall_s = time.perf_counter() - start
  if returncode:
    raise SystemExit(f"the training command failed with status {returncode} "
                     f"({_progress(workdir)}); its output ends:\n{_tail(log)}")
  ran = json.loads((workdir / trainer.CONFIG_FILE).read_text())["train"]  # as resolved
  return {"impl": "train_command", "steps": args.steps, "log_every": args.log_every,
          "steps_per_call": ran["steps_per_call"], "wall_s": round(wall_s, 1),
          **steady_throughput(_records(workdir))}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--size", default="100m")
  parser.add_argument("--pe", default="rope")
  parser.add_argument("--task", default="add_int")
  parser.add_argument("--config", default="",
                      help="FILE.py[:ARGS], a recipe to time instead of the pe family's "
                      "(--size, --pe, --task then unused), e.g. configs/paper.py:table=rope_perf")
  parser.add_argument("--steps", type=int, default=600, help="steps of the training command")
  parser.add_argument("--log_every", type=int, default=100,
                      help="its log interval (the first interval is left out)")
  parser.add_argument("--step_steps", type=int, default=30,
                      help="timed steps per repeat of the step-only benchmark")
  parser.add_argument("--workdir", default="", help="the command's run directory, its output "
                      "in WORKDIR.log (default: a temporary one, deleted afterwards)")
  parser.add_argument("--json", default="", help="append one JSON line per result here")
  parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                      help="config override for both, repeatable: --override data.num_workers=8")
  parser.add_argument("--timeout", type=float, default=0,
                      help="seconds the command may run before it is stopped and the script "
                      "fails with how far it got (its rate so far, once it logged two "
                      "intervals) and the end of its output (0: no limit)")
  args = parser.parse_args(argv)

  if args.workdir and pathlib.Path(args.workdir).exists():
    raise SystemExit(f"--workdir={args.workdir} exists (the command would resume the run in "
                     "it): name a new directory")
  spec = config_spec(args)
  with tempfile.TemporaryDirectory() as scratch:
    workdir = pathlib.Path(args.workdir or pathlib.Path(scratch) / "run")
    run = time_command(args, spec, workdir)  # first: this process holds no device yet
  print(json.dumps(run), flush=True)
  # The step on the command's own config: its batch, rows and model, with the same overrides.
  config = benchmark_train.with_overrides(cli.load_config(spec), args.override)
  step = benchmark_train.time_nupa(config, 8, args.step_steps)
  print(json.dumps(step), flush=True)
  if args.json:
    with open(args.json, "a") as f:
      for r in (run, step):
        what = {"config": args.config} if args.config else {"size": args.size}
        f.write(json.dumps({**what, "overrides": args.override, **r}) + "\n")
  print(f"\n{spec}, batch {step['batch']}, devices: {jax.devices()}")
  print(f"{'what':44} {'samples/s':>10}")
  print(f"{'python -m nupa_jax.train (after the 1st log)':44} {run['samples_per_s']:10,d}   "
        f"data wait {run['data_wait_fraction']:.0%}, {run['wall_s']:.0f} s in all")
  print(f"{'train step only (benchmark_train.py)':44} {step['samples_per_s']:10,d}")
  print(f"{'command / step':44} {run['samples_per_s'] / step['samples_per_s']:10.1%}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
