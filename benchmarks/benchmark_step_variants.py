"""The train step under each speed knob, timed side by side in one process.

    python benchmarks/benchmark_step_variants.py --size=100m --batches=256,8192 --json=v.jsonl
    python benchmarks/benchmark_step_variants.py --size=tiny --batches=16 --steps=2  # CPU smoke

The step runs on the config's mesh over every visible device: one GPU, or several under
`CUDA_VISIBLE_DEVICES=0,1` for the variants that concern their collectives.

Each variant (`VARIANTS`: model-config overrides on top of `BASELINE`, every speed setting
off, and XLA compiler options) is the real train step of `benchmark_train.py`, compiled for
the same real batches and started from the same initial state. The knobs keep the model's
math, so every variant's first step must give the default's loss and gradient norm up to bf16
rounding: both are printed and recorded next to each other.
The variants are then timed in interleaved rounds, so that clock or thermal drift favours none,
and each gets its median round. One JSON line per variant and batch size: benchmark_train's
fields plus `variant`, `overrides`, `compiler_options`, `first_loss`, `first_grad_norm` and
`speedup` (the first variant's step time / this one's), or `error` for a variant that failed.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import pathlib
import statistics
import sys
import time

import jax

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import benchmark_train  # noqa: E402  (benchmarks/ is not a package)
from nupa_jax import sharding as sharding_lib  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Variant:
  overrides: tuple[str, ...] = ()                     # benchmark_train --override items
  compiler_options: tuple[tuple[str, object], ...] = ()  # XLA debug options of this compile


_FUSED, _SPLIT = "model.fused_projections=True", "model.split_layers=True"
_NO_TRITON_GEMM = (("xla_gpu_enable_triton_gemm", False),)
_LHS = (("xla_gpu_enable_latency_hiding_scheduler", True),)
_ZERO1 = "mesh.shard_optimizer_over_data=True"
_FSDP = "mesh.shape={'data': 1, 'fsdp': -1, 'tensor': 1}"
_SMALL_SCATTERS = (("xla_gpu_reduce_scatter_combine_threshold_bytes", 8 << 20),
                   ("xla_gpu_all_gather_combine_threshold_bytes", 8 << 20))
VARIANTS = {
    "base": Variant(),
    "split_layers": Variant((_SPLIT,)),
    "fused": Variant((_FUSED,)),
    "fused_split": Variant((_FUSED, _SPLIT)),
    # XLA's dot merger concatenates the output gradients of projections that share an input
    # (dq | dk | dv) to run one weight-gradient matmul: off, to see what that copy costs.
    "no_dot_merger": Variant(compiler_options=(("xla_gpu_dot_merger_threshold_mb", 0),)),
    "no_triton_gemm": Variant(compiler_options=_NO_TRITON_GEMM),
    "fused_split_no_triton_gemm": Variant((_FUSED, _SPLIT), _NO_TRITON_GEMM),
    # cuDNN attention given each packed row's segments (the default 16 samples a row, + 1 for
    # the padding) instead of the same-segment mask it takes as a bias over the whole row.
    "fast_segments": Variant((_FUSED, _SPLIT, "model.cudnn_segments=17"), _NO_TRITON_GEMM),
    # Attention within a band of blocks that holds samples of up to 33 positions (the 1-8-digit
    # additions take up to 28), in XLA, instead of cuDNN's kernel over the whole masked row.
    "fast_span": Variant((_FUSED, _SPLIT, "model.attention_span=33"), _NO_TRITON_GEMM),
    # GEMMs through cuBLASLt, whose epilogues can take a following elementwise op.
    "fast_cublaslt": Variant((_FUSED, _SPLIT),
                             _NO_TRITON_GEMM + (("xla_gpu_enable_cublaslt", True),)),
    # XLA putting more of the elementwise and reduction work inside fewer or larger kernels:
    # the autotuner also timing cuDNN plans (Hopper and later) for each GEMM together with the
    # elementwise producers and consumers that XLA's GEMM fusion pass gathers around it (the
    # pass runs with Triton's GEMMs on); that pass's second version, which gathers more; the
    # fusion autotuner choosing between XLA's emitters and Triton for each fusion; and priority
    # fusion allowed to build Triton fusions without a reduction at their heart.
    "fast_cudnn_gemm_fusions": Variant((_FUSED, _SPLIT),
                                       (("xla_gpu_cudnn_gemm_fusion_level", 2),)),
    "fast_gemm_fusion_v2": Variant((_FUSED, _SPLIT),
                                   (("xla_gpu_experimental_gemm_fusion_v2", True),)),
    "fast_fusion_autotuner": Variant(
        (_FUSED, _SPLIT),
        _NO_TRITON_GEMM + (("xla_gpu_experimental_enable_fusion_autotuner", True),)),
    "fast_triton_heroless": Variant(
        (_FUSED, _SPLIT),
        _NO_TRITON_GEMM + (("xla_gpu_experimental_enable_triton_heroless_priority_fusion", True),)),
    # Over several GPUs: XLA's latency-hiding scheduler, which overlaps collectives with
    # compute, alone and with all-reduces combined only up to 8 MiB (the smaller all-reduces of
    # the last layers' gradients can then start while earlier layers' backward runs).
    "fast_lhs": Variant((_FUSED, _SPLIT), _NO_TRITON_GEMM + _LHS),
    "fast_lhs_small_all_reduces": Variant(
        (_FUSED, _SPLIT), _NO_TRITON_GEMM + _LHS
        + (("xla_gpu_all_reduce_combine_threshold_bytes", 8 << 20),)),
    # The optimizer state and update split over the GPUs (ZeRO stage 1): each GPU updates a
    # quarter of the float32 state on 4 GPUs, the gradients are reduce-scattered and the new
    # parameters all-gathered; then with the scheduler that overlaps those with compute, and
    # with both collectives combined only up to 8 MiB.
    "zero1": Variant((_FUSED, _SPLIT, _ZERO1), _NO_TRITON_GEMM),
    "zero1_lhs": Variant((_FUSED, _SPLIT, _ZERO1), _NO_TRITON_GEMM + _LHS),
    "zero1_lhs_small_collectives": Variant((_FUSED, _SPLIT, _ZERO1),
                                           _NO_TRITON_GEMM + _LHS + _SMALL_SCATTERS),
    # The parameters too split over the GPUs (the `fsdp` mesh axis; the batch then splits over
    # it as well): ZeRO-1 all-gathers the updated float32 parameters after the update, this
    # all-gathers each layer's bfloat16 copy before it is used (half the bytes, and each layer's
    # gather can overlap the layer before), and each GPU updates its part of them; alone, and
    # with the scheduler that does the overlapping.
    "fsdp": Variant((_FUSED, _SPLIT, _FSDP), _NO_TRITON_GEMM),
    "fsdp_lhs": Variant((_FUSED, _SPLIT, _FSDP), _NO_TRITON_GEMM + _LHS),
}


# Every variant starts from the speed settings all off, whatever a size's config turns on
# (configs/common.py), so that `base` is the plain step and each variant adds its own.
BASELINE = ("model.fused_projections=False", "model.split_layers=False",
            "model.cudnn_segments=0", "model.attention_span=0", "train.gpu_triton_gemm=True")


def resolve(name: str) -> Variant:
  if name not in VARIANTS:
    raise SystemExit(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
  return VARIANTS[name]


def overrides(name: str, extra: list[str]) -> list[str]:
  """The config overrides of variant `name`: the baseline, then `extra`, then its own."""
  return [*BASELINE, *extra, *resolve(name).overrides]


class _Run:
  """One variant's compiled step and state, started with a first step from the shared state,
  and the batches placed on its mesh."""

  def __init__(self, config, variant: Variant, vocab: int, mesh, batches, initial):
    t0 = time.perf_counter()
    self.batches = batches
    self.step, self.state = benchmark_train.build_step(
        config, vocab, mesh, batches[0], dict(variant.compiler_options),
        state=None if initial is None else jax.tree.map(lambda a: a.copy(), initial))
    self.initial = jax.tree.map(lambda a: a.copy(), self.state) if initial is None else initial
    metrics = self.run(batches[:1])
    self.extra = dict(compile_s=round(time.perf_counter() - t0, 2),
                      first_loss=float(metrics["loss"]),
                      first_grad_norm=float(metrics["grad_norm"]))
    self.run(batches[1:3])
    self.times = []

  def run(self, batches) -> dict:
    for b in batches:
      self.state, metrics = self.step(self.state, b)
    return jax.block_until_ready(metrics)


def time_variants(args, batch: int, names: list[str]) -> list[dict]:
  """Every variant at one batch size: first-step parity, then interleaved timed rounds. A
  variant that fails to compile or run gets an `error` line and the others go on."""
  configs = {n: benchmark_train.make_config(args.size, args.pe, args.task, batch,
                                            args.samples_per_row, overrides(n, args.override))
             for n in names}
  pipeline, host = benchmark_train.host_batches(configs[names[0]], 8)
  tokens = benchmark_train.non_padding_tokens(host)
  meshes = {}  # mesh shape -> (mesh, the batches placed on it): variants may change the mesh
  steps = max(3, round(args.steps * args.first_batch / batch))  # as many samples per round
  runs, errors, initial = {}, {}, None
  for name in names:
    shape = configs[name].mesh.shape
    key = tuple(sorted(dict(shape).items()))
    if key not in meshes:
      mesh = sharding_lib.make_mesh(shape)
      meshes[key] = mesh, benchmark_train.placed(host, mesh)
    try:
      # The knobs leave the parameters alone: every variant starts from one state (placed as
      # its own layout wants it).
      run = _Run(configs[name], resolve(name), pipeline.encoder.vocab_size, *meshes[key],
                 initial)
    except Exception as e:  # noqa: BLE001  (an XLA option or kernel this card rejects)
      errors[name] = f"{type(e).__name__}: {e}"[:800]
      print(f"{name:28} FAILED: {errors[name]}", file=sys.stderr, flush=True)
      continue
    runs[name], initial = run, run.initial
    print(f"{name:28} first loss {run.extra['first_loss']:.6f}  grad norm "
          f"{run.extra['first_grad_norm']:.6f}  (compile and init {run.extra['compile_s']} s)",
          file=sys.stderr, flush=True)
  for _ in range(args.rounds):
    for run in runs.values():
      t0 = time.perf_counter()
      run.run(itertools.islice(itertools.cycle(run.batches), steps))
      run.times.append((time.perf_counter() - t0) / steps)
  results = []
  for name in names:
    variant = resolve(name)
    head = dict(variant=name, overrides=list(variant.overrides),
                compiler_options=dict(variant.compiler_options))
    if name in errors:
      results.append(dict(head, batch=batch, error=errors[name]))
      continue
    run = runs[name]
    results.append(dict(head, **benchmark_train.step_result(
        configs[name], pipeline, tokens, statistics.median(run.times), **run.extra)))
  base_ms = results[0].get("step_ms")
  for r in results:
    if "step_ms" in r:
      r["speedup"] = round(base_ms / r["step_ms"], 4) if base_ms else None
  return results


def best(results: list[dict], batch: int) -> str:
  """The fastest variant at `batch`."""
  timed = [r for r in results if r["batch"] == batch and "step_ms" in r]
  return min(timed, key=lambda r: r["step_ms"])["variant"]


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  benchmark_train.add_workload_flags(parser, batches="256,8192")
  parser.add_argument("--variants", default=",".join(VARIANTS),
                      help="comma separated, the first is the baseline; known: "
                      + ", ".join(VARIANTS))
  parser.add_argument("--steps", type=int, default=20,
                      help="timed steps per round at the first batch size; larger batches run "
                      "as many samples (at least 3 steps)")
  parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per variant")
  parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                      help="config override for every variant, repeatable")
  parser.add_argument("--json", default="", help="append one JSON line per result here")
  parser.add_argument("--best_to", default="",
                      help="write the fastest variant at the first batch size to this file")
  args = parser.parse_args(argv)
  names = args.variants.split(",")
  batches = [int(b) for b in args.batches.split(",")]
  args.first_batch = batches[0]
  for name in names:
    resolve(name)
  print(f"devices: {jax.devices()}", file=sys.stderr)
  results = []
  for batch in batches:
    for r in time_variants(args, batch, names):
      results.append(r)
      print(json.dumps(r), flush=True)
      if args.json:
        with open(args.json, "a") as f:
          f.write(json.dumps(r) + "\n")
  print(f"\n{'variant':28} {'batch':>6} {'step ms':>9} {'samples/s':>10} {'MFU':>6} "
        f"{'speedup':>8} {'first loss':>11} {'grad norm':>10}")
  for r in results:
    if "error" in r:
      print(f"{r['variant']:28} {r['batch']:6d}  failed: {r['error'][:60]}")
      continue
    print(f"{r['variant']:28} {r['batch']:6d} {r['step_ms']:9.3f} {r['samples_per_s']:10d} "
          f"{r['mfu']:6.1%} {r['speedup'] or 0:8.3f} {r['first_loss']:11.6f} "
          f"{r['first_grad_norm']:10.6f}")
  first_batch = results[0]["batch"]
  print(f"fastest at batch {first_batch}: {best(results, first_batch)}")
  if args.best_to:
    pathlib.Path(args.best_to).write_text(best(results, first_batch) + "\n")
  return 0


if __name__ == "__main__":
  sys.exit(main())
