"""Host time of one call of the train step: over the nnx state, and over its leaves.

A call's host side (walking the argument trees, checking and handing each device its
buffers) overlaps the devices' work only while it is shorter than a step. On one GPU at the
paper's batch it is; over several GPUs the step shortens while the call's host work does not,
so the training loop can fall behind its GPUs. The trainer calls the step over the state's
leaves (`training.step.make_train_step`'s `leaves_of`) to skip the Python walk of the nnx
state tree; this measures what that saves on the visible devices.

    python benchmarks/benchmark_dispatch.py --size=100m --batches=256 --json=d.jsonl
    python benchmarks/benchmark_dispatch.py --size=tiny --batches=16 --calls=20   # CPU smoke

Each call is timed from the call to its return (on GPUs jax dispatches asynchronously: the
devices run on after it), then waited for, so every call finds the devices idle; the median
over `--calls` calls, alternating the two forms. The CPU backend runs much of a step inside
the call, so there `dispatch_us` is mostly the step itself; `pass_through_us` times a jitted
function that only hands the state back (donated), the trees' and buffers' host cost alone,
on any backend. One JSON line per form and batch size: `form` (`state`, `leaves`),
`dispatch_us`, `pass_through_us` (medians), `devices`, `backend`, `leaves`, and the config.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

import jax

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import benchmark_train  # noqa: E402  (benchmarks/ is not a package)
from nupa_jax import sharding as sharding_lib  # noqa: E402

FORMS = ("state", "leaves")


def time_forms(args, batch: int) -> list[dict]:
  """Both forms of one config's step, from one initial state, timed call by call in turn."""
  config = benchmark_train.make_config(args.size, args.pe, args.task, batch,
                                       args.samples_per_row, args.override)
  mesh = sharding_lib.make_mesh(config.mesh.shape)
  pipeline, batches, _ = benchmark_train.device_batches(config, 4, mesh)
  vocab = pipeline.encoder.vocab_size
  steps, states = {}, {}
  steps["state"], states["state"] = benchmark_train.build_step(config, vocab, mesh)
  steps["leaves"], states["leaves"] = benchmark_train.build_step(
      config, vocab, mesh, state=jax.tree.map(lambda a: a.copy(), states["state"]),
      over_leaves=True)
  pass_through = jax.jit(lambda state: state, donate_argnums=0)
  times = {(form, what): [] for form in FORMS for what in ("step", "pass_through")}
  for i in range(args.calls + 2):  # the first two calls compile and warm up
    for form in FORMS:
      t0 = time.perf_counter()
      states[form], metrics = steps[form](states[form], batches[i % len(batches)])
      t1 = time.perf_counter()
      jax.block_until_ready(metrics)
      t2 = time.perf_counter()
      states[form] = pass_through(states[form])
      t3 = time.perf_counter()
      jax.block_until_ready(states[form])
      if i >= 2:
        times[form, "step"].append(t1 - t0)
        times[form, "pass_through"].append(t3 - t2)
  median_us = lambda key: round(statistics.median(times[key]) * 1e6, 1)
  return [dict(form=form, size=args.size, pe=args.pe, task=args.task, batch=batch,
               dispatch_us=median_us((form, "step")),
               pass_through_us=median_us((form, "pass_through")),
               calls=args.calls, devices=jax.device_count(), backend=jax.default_backend(),
               leaves=len(jax.tree.leaves(states["state"]))) for form in FORMS]


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  benchmark_train.add_workload_flags(parser, batches="256")
  parser.add_argument("--calls", type=int, default=200, help="timed calls per form")
  parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                      help="config override, repeatable: --override model.split_layers=True")
  parser.add_argument("--json", default="", help="append one JSON line per result here")
  args = parser.parse_args(argv)
  for batch in (int(b) for b in args.batches.split(",")):
    results = time_forms(args, batch)
    for r in results:
      print(json.dumps(r), flush=True)
      if args.json:
        with open(args.json, "a") as f:
          f.write(json.dumps(r) + "\n")
    state, leaves = results
    print(f"batch {batch}, {state['devices']} {state['backend']} device(s), us a call (nnx "
          f"state / its leaves): step {state['dispatch_us']:.0f} / {leaves['dispatch_us']:.0f}, "
          f"pass-through {state['pass_through_us']:.0f} / {leaves['pass_through_us']:.0f}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
