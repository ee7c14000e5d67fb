"""Per-GPU training throughput of one run spread over 1, 2, 4 GPUs: one process, or one per GPU.

    python benchmarks/benchmark_scaling.py [--gpus 1,2,4] [--modes process,per_gpu] \\
        [--config configs/pe.py:size=0.9b] [--batch_per_gpu 512 | --global_batch 256] \\
        [--meshes fsdp,data,zero1] [--records 4] [--json OUT.json] [-- extra train flags]

Each measurement is a real `python -m nupa_jax.train` run (the same code path users run, data
pipeline included) on one of the `MESHES`: `fsdp` (default) shards the model's parameters over
all its GPUs (mesh `data=1, fsdp=-1, tensor=1`), `data` replicates them (data parallel),
`zero1` replicates them and splits the optimizer state over the GPUs
(`mesh.shard_optimizer_over_data`). The global batch grows with the GPUs (`--batch_per_gpu`
samples each: weak scaling, the per-GPU work stays the same) or stays `--global_batch` (strong
scaling: a recipe's batch, such as the paper's 256, spread thinner). Modes:
  process  one process sees N GPUs (the first N of CUDA_VISIBLE_DEVICES where it is set, so
           that measurements on other GPUs of the host can run beside it; else 0..N-1);
  per_gpu  N processes of one GPU each, started by launch/local.sh (jax.distributed).
The run logs every `--log_every` steps to train_metrics.jsonl; the first `--warmup` records
(compilation) are dropped and, once `--records` more are in, the run is stopped (no final
checkpoint or evaluation is waited for). Throughput = median of those records' tokens_per_s
(non-padding tokens of the global batch per second of training time), per GPU = / N.
Efficiency = per-GPU throughput at N / per-GPU throughput of one GPU in one process (of the
same mesh); speed-up = throughput at N / that of one GPU.

`--platform cpu` runs the same measurements on N fake CPU devices: a check of the mechanics,
not a measurement.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
METRICS_FILE = "train_metrics.jsonl"  # nupa_jax.training.writers.METRICS_FILE
MODES = ("process", "per_gpu")


# Mesh flags of each layout (`--meshes`).
MESHES = {
    "fsdp": ["--config.mesh.shape.data=1", "--config.mesh.shape.fsdp=-1",
             "--config.mesh.shape.tensor=1"],
    "data": ["--config.mesh.shape.data=-1", "--config.mesh.shape.fsdp=1",
             "--config.mesh.shape.tensor=1"],
    "zero1": ["--config.mesh.shape.data=-1", "--config.mesh.shape.fsdp=1",
              "--config.mesh.shape.tensor=1", "--config.mesh.shard_optimizer_over_data=True"],
}


def train_flags(config: str, workdir: pathlib.Path, batch: int, log_every: int,
                extra: list[str], mesh: str = "fsdp") -> list[str]:
  """A training run that logs often and never checkpoints or evaluates before it is stopped."""
  never = 10**9
  return [f"--config={config}", f"--workdir={workdir}", *MESHES[mesh],
          f"--config.train.batch_size={batch}", f"--config.train.steps={never}",
          f"--config.train.log_every={log_every}", f"--config.checkpoint.every={never}",
          "--config.eval.every=0", "--config.eval.validation_batches=1",
          # One step a call in every mode: a process per GPU would otherwise run one, a
          # process over several GPUs several (train.steps_per_call's automatic choice).
          "--config.train.steps_per_call=1", *extra]


def command(mode: str, gpus: int, platform: str, flags: list[str]) -> tuple[list[str], dict]:
  """(argv, environment) of one measurement."""
  env = dict(os.environ)
  if mode == "per_gpu":
    return [str(ROOT / "launch" / "local.sh"), "-n", str(gpus), "-d", "1", "-p", platform,
            "--", *flags], dict(env, PYTHON=sys.executable)
  if platform == "cpu":
    flags_given = env.get("XLA_FLAGS", "")  # kept: the fake devices are added to them
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=f"{flags_given} "
               f"--xla_force_host_platform_device_count={gpus}".strip())
  else:
    env["CUDA_VISIBLE_DEVICES"] = ",".join(first_gpus(gpus, env.get("CUDA_VISIBLE_DEVICES")))
  return [sys.executable, "-m", "nupa_jax.train", *flags], env


def first_gpus(n: int, visible: str | None) -> list[str]:
  """The first `n` GPUs of a CUDA_VISIBLE_DEVICES list (None or empty: GPUs 0..n-1)."""
  if not visible:
    return [str(i) for i in range(n)]
  gpus = [g.strip() for g in visible.split(",") if g.strip()]
  if len(gpus) < n:
    raise SystemExit(f"{n} GPUs asked for, but CUDA_VISIBLE_DEVICES={visible} lists {len(gpus)}")
  return gpus[:n]


def _records(path: pathlib.Path) -> list[dict]:
  if not path.exists():
    return []
  out = []
  for line in path.read_text().splitlines():
    try:
      record = json.loads(line)
    except json.JSONDecodeError:
      continue  # a line being written
    if "tokens_per_s" in record:
      out.append(record)
  return out


def measure(argv: list[str], env: dict, workdir: pathlib.Path, warmup: int, records: int,
            timeout: float) -> list[dict]:
  """Runs the command until `warmup + records` log records exist, then stops it."""
  log = (workdir.parent / f"{workdir.name}.log").open("w")
  process = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
  deadline = time.monotonic() + timeout
  try:
    while True:
      found = _records(workdir / METRICS_FILE)
      if len(found) >= warmup + records:
        return found[warmup:warmup + records]
      if process.poll() is not None:
        raise RuntimeError(f"the run exited with status {process.returncode} after "
                           f"{len(found)} log records; see {log.name}")
      if time.monotonic() > deadline:
        raise RuntimeError(f"only {len(found)} log records after {timeout:.0f} s; see "
                           f"{log.name}")
      time.sleep(1.0)
  finally:
    if process.poll() is None:
      os.killpg(process.pid, signal.SIGTERM)  # local.sh stops its processes on TERM
      try:
        process.wait(timeout=60)
      except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    log.close()


def global_batch(batch_per_gpu: int, fixed: int | None):
  """Samples per step on n GPUs: `fixed` whatever n (strong scaling), else n x per GPU."""
  return (lambda n: fixed) if fixed else (lambda n: batch_per_gpu * n)


def device_name(platform: str) -> str:
  if platform == "cpu":
    return "CPU (fake devices)"
  try:
    names = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                           capture_output=True, text=True, check=True).stdout.split("\n")
    return names[0].strip()
  except (OSError, subprocess.CalledProcessError):
    return "unknown GPU"


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
  parser.add_argument("--gpus", default="1,2,4", help="GPU counts, comma-separated")
  parser.add_argument("--modes", default=",".join(MODES), help="process, per_gpu")
  parser.add_argument("--config", default="configs/pe.py:size=0.9b")
  batch = parser.add_mutually_exclusive_group()
  batch.add_argument("--batch_per_gpu", type=int, default=512,
                     help="samples per GPU (weak scaling)")
  batch.add_argument("--global_batch", type=int,
                     help="samples per step whatever the GPUs (strong scaling)")
  parser.add_argument("--meshes", default="fsdp", help=f"of {', '.join(MESHES)}")
  parser.add_argument("--log_every", type=int, default=10, help="steps per log record")
  parser.add_argument("--warmup", type=int, default=1, help="log records dropped first")
  parser.add_argument("--records", type=int, default=4, help="log records measured")
  parser.add_argument("--timeout", type=float, default=900, help="seconds per measurement")
  parser.add_argument("--platform", choices=("gpu", "cpu"), default="gpu")
  parser.add_argument("--json", help="write the results here too")
  args, extra = parser.parse_known_args()
  extra = [a for a in extra if a != "--"]
  counts = [int(g) for g in args.gpus.split(",")]
  modes = args.modes.split(",")
  unknown = sorted(set(modes) - set(MODES))
  if unknown:
    parser.error(f"unknown modes {unknown}; known: {', '.join(MODES)}")
  meshes = args.meshes.split(",")
  unknown = sorted(set(meshes) - set(MESHES))
  if unknown:
    parser.error(f"unknown meshes {unknown}; known: {', '.join(MESHES)}")
  if args.global_batch is not None and args.global_batch < 1:
    parser.error(f"--global_batch must be >= 1, got {args.global_batch}")
  batch = global_batch(args.batch_per_gpu, args.global_batch)

  device = device_name(args.platform)
  print(f"{device}; config {args.config}; "
        + (f"{args.global_batch} samples per step" if args.global_batch else
           f"{args.batch_per_gpu} samples per GPU per step") + f"; meshes {meshes}", flush=True)
  results = []
  with tempfile.TemporaryDirectory(prefix="nupa_scaling_") as tmp:
    for mesh in meshes:
      for mode in modes:
        for n in counts:
          if mode == "per_gpu" and n == 1:
            continue  # one process of one GPU: the same run as mode `process`
          name = f"{mesh} {mode} x{n}"
          workdir = pathlib.Path(tmp) / f"{mesh}_{mode}_{n}"
          flags = train_flags(args.config, workdir, batch(n), args.log_every, extra, mesh)
          argv, env = command(mode, n, args.platform, flags)
          try:
            found = measure(argv, env, workdir, args.warmup, args.records, args.timeout)
          except RuntimeError as e:
            log = (workdir.parent / f"{workdir.name}.log").read_text().splitlines()[-20:]
            print(f"{name}: failed: {e}\n" + "\n".join(log), file=sys.stderr, flush=True)
            results.append({"mesh": mesh, "mode": mode, "gpus": n, "error": str(e)})
            continue
          tokens = statistics.median(r["tokens_per_s"] for r in found)
          samples = statistics.median(r["samples_per_s"] for r in found)
          results.append({"mesh": mesh, "mode": mode, "gpus": n, "batch": batch(n),
                          "tokens_per_s": tokens, "tokens_per_s_per_gpu": tokens / n,
                          "samples_per_s": samples,
                          "records": [r["tokens_per_s"] for r in found]})
          print(f"{name}: {tokens:,.0f} tokens/s ({tokens / n:,.0f} per GPU)", flush=True)

  print(f"\n{'mesh':<7}{'mode':<10}{'GPUs':>5}{'tokens/s':>14}{'per GPU':>12}{'efficiency':>12}"
        f"{'speed-up':>10}")
  for r in results:
    if "error" in r:
      print(f"{r['mesh']:<7}{r['mode']:<10}{r['gpus']:>5}  failed: {r['error']}")
      continue
    base = next((b["tokens_per_s"] for b in results if b["mesh"] == r["mesh"]
                 and b["mode"] == "process" and b["gpus"] == 1 and "error" not in b), None)
    if base:
      r["efficiency"] = r["tokens_per_s_per_gpu"] / base
      r["speedup"] = r["tokens_per_s"] / base
    eff, up = ((f"{100 * r['efficiency']:.1f}%", f"{r['speedup']:.2f}x") if base
               else ("-", "-"))
    print(f"{r['mesh']:<7}{r['mode']:<10}{r['gpus']:>5}{r['tokens_per_s']:>14,.0f}"
          f"{r['tokens_per_s_per_gpu']:>12,.0f}{eff:>12}{up:>10}")
  if args.json:
    pathlib.Path(args.json).write_text(json.dumps(
        {"device": device, "config": args.config, "batch_per_gpu": args.batch_per_gpu,
         "global_batch": args.global_batch, "extra_flags": extra, "results": results},
        indent=2) + "\n")
  return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
  sys.exit(main())
