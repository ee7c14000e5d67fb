"""Where the time of one training step goes on the GPU: device kernels grouped and ranked.

    python benchmarks/profile_train.py --size=100m --batch=256 [--override KEY=VALUE ...]

Runs the real train step of `benchmark_train.py` under `jax.profiler.trace` (Perfetto JSON,
no TensorBoard needed), then sums the device-side kernel times per kernel and per kind
(matmul, attention, XLA fusion, copy, collective) and reports how much of each step the GPU
was busy: the gap between busy time and step time is host / launch overhead, the rest says
which kernels to attack. `--json` appends the summary, `--trace_dir` keeps the raw trace.
"""
from __future__ import annotations

import argparse
import collections
import gzip
import json
import pathlib
import re
import sys
import tempfile
import time

import jax

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import benchmark_step_variants  # noqa: E402  (benchmarks/ is not a package)
import benchmark_train  # noqa: E402
import hlo_index  # noqa: E402

# Kernel kinds by name (cuBLAS / CUTLASS / cuDNN kernel names, XLA fusion names).
KINDS = (
    ("attention", re.compile(r"fmha|flash|cudnn|attention|sdpa", re.I)),
    ("matmul", re.compile(r"gemm|xmma|nvjet|cutlass|matmul|sm90_|ampere_|triton_gemm", re.I)),
    ("collective", re.compile(r"nccl|all-reduce|all-gather|reduce-scatter", re.I)),
    ("copy", re.compile(r"memcpy|memset|copy", re.I)),
    ("reduction", re.compile(r"reduce", re.I)),
    ("fusion", re.compile(r"fusion|loop_|input_|convert|transpose", re.I)),
)


def kind_of(name: str) -> str:
  return next((kind for kind, pattern in KINDS if pattern.search(name)), "other")


def device_events(trace: dict) -> list[dict]:
  """Complete ('X') events of the first GPU's process of a Perfetto / Chrome trace (a step over
  several GPUs runs the same program on each: one GPU's time is the step's); on a machine
  without one, the XLA operations that the host ran (those with an `hlo_op`)."""
  gpus = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
          if e.get("ph") == "M" and e.get("name") == "process_name"
          and re.search(r"GPU|/device:", e.get("args", {}).get("name", ""))}
  timed = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("dur", 0) > 0]
  if gpus:
    first = min(gpus, key=lambda pid: _device_number(gpus[pid]))
    return [e for e in timed if e.get("pid") == first]
  return [e for e in timed if "hlo_op" in e.get("args", {})]


def _device_number(name: str) -> tuple[int, str]:
  """Sort key of a GPU process name such as `/device:GPU:1`: its number, then the name."""
  found = re.search(r"(\d+)\D*$", name)
  return (int(found.group(1)) if found else 0, name)


def hlo_key(event: dict) -> str:
  """The event's HLO instruction as `hlo_index` keys it: its `hlo_op` annotation, else the
  kernel name (XLA's own kernels are named after their instruction)."""
  return hlo_index.kernel_key(event.get("args", {}).get("hlo_op") or event["name"])


def busy_time(events: list[dict]) -> float:
  """Microseconds during which at least one kernel ran (the union of the intervals)."""
  total, end = 0.0, float("-inf")
  for start, stop in sorted((e["ts"], e["ts"] + e["dur"]) for e in events):
    if stop > end:
      total += stop - max(start, end)
      end = stop
  return total


def summarize(events: list[dict], steps: int, top: int,
              hlo: dict[str, hlo_index.HloOp] | None = None) -> dict:
  """Kernel time per kernel, kind and (with the compiled program's `hlo` index) per line of
  code, each top kernel described by the HLO instruction behind it."""
  hlo = hlo or {}
  by_name = collections.defaultdict(lambda: [0.0, 0])
  by_kind, by_source = collections.Counter(), collections.Counter()
  ops = collections.defaultdict(collections.Counter)
  for e in events:
    name = e["name"]
    by_name[name][0] += e["dur"]
    by_name[name][1] += 1
    by_kind[kind_of(name)] += e["dur"]
    key = hlo_key(e)
    ops[name][key] += e["dur"]
    if key in hlo:
      by_source[hlo[key].source or hlo[key].jax_op or hlo[key].op] += e["dur"]
  span = (max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events)) if events else 0
  ranked = sorted(by_name.items(), key=lambda kv: -kv[1][0])[:top]
  return {
      "steps": steps,
      "span_ms_per_step": round(span / steps / 1e3, 3),
      "busy_ms_per_step": round(busy_time(events) / steps / 1e3, 3),
      # Collective time during which no other kernel ran: what overlapping them would save.
      "exposed_collective_ms_per_step": round(
          (busy_time(events) - busy_time([e for e in events
                                          if kind_of(e["name"]) != "collective"]))
          / steps / 1e3, 3),
      "kernels_per_step": round(len(events) / steps, 1),
      "ms_per_step_by_kind": {k: round(v / steps / 1e3, 3) for k, v in by_kind.most_common()},
      "top_kernels": [{"name": n[:120], "kind": kind_of(n),
                       "ms_per_step": round(t / steps / 1e3, 4),
                       "calls_per_step": round(c / steps, 1), **_described(ops[n], hlo)}
                      for n, (t, c) in ranked],
      "ms_per_step_by_source": {k: round(v / steps / 1e3, 3)
                                for k, v in by_source.most_common(top)},
  }


def _described(ops: collections.Counter, hlo: dict[str, hlo_index.HloOp]) -> dict:
  """The instruction that takes most of a kernel's time, and what it is."""
  key = ops.most_common(1)[0][0]
  if key not in hlo:
    return {"hlo_op": key}
  return {"hlo_op": key, **hlo[key]._asdict(), "instructions": len(ops)}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--size", default="100m")
  parser.add_argument("--pe", default="rope")
  parser.add_argument("--task", default="add_int")
  parser.add_argument("--batch", type=int, default=256)
  parser.add_argument("--samples_per_row", type=int, default=16)
  parser.add_argument("--steps", type=int, default=5, help="profiled steps")
  parser.add_argument("--top", type=int, default=30)
  parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
  parser.add_argument("--variant", default="base",
                      help="a benchmark_step_variants variant (its overrides and XLA options)")
  parser.add_argument("--json", default="", help="append the summary as one JSON line here")
  parser.add_argument("--trace_dir", default="", help="keep the raw trace here")
  parser.add_argument("--hlo_out", default="", help="write the compiled program's HLO here")
  args = parser.parse_args(argv)
  variant = benchmark_step_variants.resolve(args.variant)
  overrides = benchmark_step_variants.overrides(args.variant, args.override)
  config = benchmark_train.make_config(args.size, args.pe, args.task, args.batch,
                                       args.samples_per_row, overrides)
  train_step, state, batches, _, _ = benchmark_train.prepare_nupa(
      config, 4, dict(variant.compiler_options))
  hlo_text = train_step.as_text()
  if args.hlo_out:
    pathlib.Path(args.hlo_out).write_text(hlo_text)
  for b in batches * 2:  # warm up
    state, metrics = train_step(state, b)
  jax.block_until_ready(metrics)
  trace_dir = args.trace_dir or tempfile.mkdtemp(prefix="nupa_trace_")
  with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
    t0 = time.perf_counter()
    for i in range(args.steps):
      state, metrics = train_step(state, batches[i % len(batches)])
    jax.block_until_ready(metrics)
    wall = (time.perf_counter() - t0) / args.steps
  trace_file = max(pathlib.Path(trace_dir).rglob("perfetto_trace.json.gz"),
                   key=lambda p: p.stat().st_mtime)
  with gzip.open(trace_file, "rt") as f:
    summary = summarize(device_events(json.load(f)), args.steps, args.top,
                        hlo_index.index(hlo_text))
  summary.update(size=args.size, batch=args.batch, variant=args.variant, overrides=overrides,
                 compiler_options=dict(variant.compiler_options),
                 wall_ms_per_step=round(wall * 1e3, 3), device=str(jax.devices()[0]),
                 devices=jax.device_count())
  print(f"\nwall {summary['wall_ms_per_step']} ms/step (profiler on), device busy "
        f"{summary['busy_ms_per_step']} ms, {summary['kernels_per_step']} kernels/step, "
        f"collectives alone {summary['exposed_collective_ms_per_step']} ms")
  for kind, ms in summary["ms_per_step_by_kind"].items():
    print(f"  {kind:11} {ms:8.3f} ms")
  print(f"\n{'ms/step':>8} {'calls':>6}  kind        kernel\n{'':17}HLO instruction, "
        "opcode, shape | JAX operation | source")
  for k in summary["top_kernels"]:
    print(f"{k['ms_per_step']:8.3f} {k['calls_per_step']:6.1f}  {k['kind']:11} {k['name']}")
    if "op" in k:
      print(f"{'':17}{k['hlo_op']} {k['op']} {k['shape'][:60]} | {k['jax_op'][-90:]} | "
            f"{k['source']}")
  print(f"\n{'ms/step':>8}  source line (or JAX operation) behind the kernels")
  for source, ms in summary["ms_per_step_by_source"].items():
    print(f"{ms:8.3f}  {source[-110:]}")
  if args.json:
    with open(args.json, "a") as f:
      f.write(json.dumps(summary) + "\n")
  return 0


if __name__ == "__main__":
  sys.exit(main())
