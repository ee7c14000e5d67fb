"""Training throughput and MFU of nupa_jax next to the paper's PyTorch reference.

nupa_jax: the real train step (`training.step.make_train_step`) on real packed batches from
the data pipeline (`data.Pipeline`), for a config family and size, at several batch sizes
(samples per step, the paper's unit). Batches are generated before timing and cycled, so the
numbers measure the step, not the host; `benchmark_pipeline.py` measures the host side.

Reference (`--reference`): Hugging Face `LlamaForCausalLM` with the same widths, bf16
autocast, fused AdamW, gradient clipping at the configured norm (1.0: the Transformers
trainer's default, which the paper keeps), each batch padded to its longest sample (what the
paper's code does), on the same tokens.

MFU = 6 x parameters x non-padding tokens per second / the dense bf16 peak of the devices the
step runs on (989 TFLOP/s a card for H100 SXM and H200; every visible device for nupa_jax,
one for the reference).

  python benchmarks/benchmark_train.py --size=100m --batches=256,1024,4096 --reference
  python benchmarks/benchmark_train.py --size=tiny --batches=64 --steps=5     # CPU smoke run
"""
from __future__ import annotations

import argparse
import ast
import itertools
import json
import pathlib
import statistics
import sys
import time
from collections.abc import Sequence

import jax
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # the configs/ package
from configs import pe as pe_configs
from nupa_jax import data as data_lib
from nupa_jax import models
from nupa_jax.models import attention
from nupa_jax.training import optimizer as optimizer_lib
from nupa_jax.models import state as state_lib
from nupa_jax.training import settings as train_settings
from nupa_jax.training import step as step_lib
from nupa_jax import sharding as sharding_lib

PEAK_BF16 = 989e12


def make_config(size: str, pe: str, task: str, batch_size: int, samples_per_row: int,
                overrides: list[str] = ()):
  """The pe family's config at `size`, with `section.field=value` overrides (values read as
  Python literals, else strings), e.g. `model.scan_unroll=8` or `model.attention_impl=cudnn`."""
  config = pe_configs.get_config(f"pe={pe},task={task},size={size}")
  config.train.batch_size = batch_size
  config.data.samples_per_row = samples_per_row
  config = with_overrides(config, overrides)
  attention.check_segments(int(config.model.get("cudnn_segments", 0)), samples_per_row)
  return config


def with_overrides(config, overrides: Sequence[str] = ()):
  """`config`, changed in place, with `section.field=value` overrides (values read as Python
  literals, else strings)."""
  for item in overrides:
    key, _, text = item.partition("=")
    *path, name = key.split(".")
    node = config
    for part in path:
      node = node[part]
    try:
      node[name] = ast.literal_eval(text)
    except (ValueError, SyntaxError):
      node[name] = text
  return config


def host_batches(config, count: int):
  """`count` consecutive real training batches as numpy (one process's rows = all rows), made
  in this process (grain workers would only add their start-up to a few batches), as a run of
  `config` makes them (its text mode's rows: RF-CoT's one trace a row, for one)."""
  pipeline = data_lib.Pipeline(*data_lib.run_config(config))
  with pipeline.train_iterator(None, 0, num_workers=0) as it:
    batches = [next(it) for _ in range(count)]
  return pipeline, batches


def non_padding_tokens(batches: list[dict]) -> list[int]:
  """Each host batch's tokens that are not padding."""
  return [int(np.sum(b["segment_ids"] > 0)) for b in batches]


def placed(batches: list[dict], mesh) -> list[dict]:
  """Host batches' array fields on the devices, split over `mesh`'s batch axes."""
  batch_sh = sharding_lib.batch_sharding(mesh)
  return [jax.device_put(step_lib.device_batch(b), batch_sh) for b in batches]


def device_batches(config, n_batches: int, mesh):
  """(pipeline, `n_batches` real packed batches already on the devices, the non-padding tokens
  of each)."""
  pipeline, batches = host_batches(config, n_batches)
  return pipeline, placed(batches, mesh), non_padding_tokens(batches)


def build_step(config, vocab: int, mesh, example_batch=None, compiler_options=None,
               state=None, over_leaves: bool = False):
  """(train_step, state) of a config: the real jitted step with the XLA options the trainer
  gives it (`config.train`) updated by `compiler_options` (a dict, e.g.
  {"xla_gpu_dot_merger_threshold_mb": 0}, or {}), compiled ahead for `example_batch` when
  `compiler_options` is given, and a fresh state unless `state` (of the same structure, placed
  on this config's shardings) is given. `over_leaves`: the step as the trainer calls it, over
  the state's leaves (`make_train_step`'s `leaves_of`), and the state as that list."""
  tx = optimizer_lib.make(config.train)
  spec = state_lib.spec(config.model, vocab, mesh, config.mesh.rules, seed=0, tx=tx,
                        optimizer_over_data=sharding_lib.optimizer_over_data(config))
  if state is None:
    state = state_lib.initialise(spec, config.model, vocab, seed=0, tx=tx)
  else:  # another layout's state (the optimizer's split over `data` differs): moved to this one
    state = jax.device_put(state, spec.shardings)
  options = train_settings.Train.from_config(config).compiler_options(jax.default_backend())
  train_step = step_lib.make_train_step(
      spec.graphdef, spec.shardings, sharding_lib.batch_sharding(mesh),
      sharding_lib.replicated(mesh), optimizer_lib.schedule(config.train),
      rng_seed=0 if spec.needs_rng else None,
      compiler_options={**options, **dict(compiler_options or {})},
      grad_shardings=spec.grad_shardings, leaves_of=state if over_leaves else None)
  if over_leaves:
    state = jax.tree.leaves(state)
  if compiler_options is not None:
    train_step = train_step.lower(state, example_batch).compile()
  return train_step, state


def prepare_nupa(config, n_batches: int, compiler_options=None):
  """(train_step, state, device batches, non-padding tokens per batch, pipeline) of a config:
  the real jitted step and real packed batches, already on the devices."""
  mesh = sharding_lib.make_mesh(config.mesh.shape)
  pipeline, device, tokens = device_batches(config, n_batches, mesh)
  train_step, state = build_step(config, pipeline.encoder.vocab_size, mesh, device[0],
                                 compiler_options)
  return train_step, state, device, tokens, pipeline


def mfu(params: int, tokens_per_s: float, devices: int = 1) -> float:
  """Model FLOPs utilization: 6 x params x non-padding tokens/s over the bf16 peak of all the
  devices the step runs on."""
  return round(6 * params * tokens_per_s / (PEAK_BF16 * devices), 4)


def step_result(config, pipeline, tokens: list[int], step_s: float, **extra) -> dict:
  """The JSON fields of one timed nupa_jax step (`extra` first: compile time, loss, ...); the
  step runs on every visible device (the config's mesh spans them)."""
  params = models.count_params(config.model, pipeline.encoder.vocab_size)
  mean_tokens = float(np.mean(tokens))
  batch = config.train.batch_size
  return dict(
      impl="nupa_jax", batch=batch, rows=pipeline.rows, seq_len=pipeline.seq_len,
      params=params, **extra, step_ms=round(step_s * 1e3, 3),
      samples_per_s=round(batch / step_s), tokens_per_s=round(mean_tokens / step_s),
      padding=round(1 - mean_tokens / (pipeline.rows * pipeline.seq_len), 4),
      devices=jax.device_count(), mfu=mfu(params, mean_tokens / step_s, jax.device_count()))


def time_nupa(config, n_batches: int, steps: int) -> dict:
  train_step, state, device, tokens, pipeline = prepare_nupa(config, n_batches)
  t0 = time.perf_counter()
  state, metrics = train_step(state, device[0])
  jax.block_until_ready(metrics)
  compile_s = time.perf_counter() - t0
  for b in device[1:3]:
    state, metrics = train_step(state, b)
  jax.block_until_ready(metrics)
  times = []
  for _ in range(3):
    t0 = time.perf_counter()
    for b in itertools.islice(itertools.cycle(device), steps):
      state, metrics = train_step(state, b)
    jax.block_until_ready(metrics)
    times.append((time.perf_counter() - t0) / steps)
  result = step_result(config, pipeline, tokens, statistics.median(times),
                       compile_s=round(compile_s, 2))
  return {**result, "loss": float(metrics["loss"])}


def time_reference(config, n_batches: int, steps: int) -> dict:
  """HF LlamaForCausalLM, bf16 autocast, fused AdamW, gradient clipping as configured (the
  Transformers trainer's default, which the paper keeps), batches padded to their longest
  sample."""
  import torch
  import transformers

  padded = config.copy_and_resolve_references()
  padded.data.packing = "padded"
  pipeline, batches = host_batches(padded, n_batches)
  vocab = pipeline.encoder.vocab_size
  m = models.resolve(config.model, vocab)
  hf_config = transformers.LlamaConfig(
      vocab_size=vocab, hidden_size=m.hidden, intermediate_size=m.mlp,
      num_hidden_layers=m.num_layers, num_attention_heads=m.heads,
      num_key_value_heads=m.kv_heads, max_position_embeddings=4096,
      rope_theta=500000.0, tie_word_embeddings=False)
  device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
  model = transformers.LlamaForCausalLM(hf_config).to(device)
  opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01,
                          fused=device.type == "cuda")
  clip = float(config.train.grad_clip)  # the Transformers trainer's max_grad_norm, as ours
  torch_batches, tokens = [], []
  for b in batches:
    real = b["segment_ids"] > 0
    longest = int(real.sum(axis=1).max())
    labels = np.where(b["loss_mask"], b["targets"], -100)[:, :longest]
    torch_batches.append((torch.from_numpy(b["inputs"][:, :longest].astype(np.int64)).to(device),
                          torch.from_numpy(real[:, :longest]).to(device),
                          torch.from_numpy(labels.astype(np.int64)).to(device)))
    tokens.append(int(real.sum()))

  def one(batch):
    inputs, mask, labels = batch
    with torch.autocast(device.type, dtype=torch.bfloat16):
      logits = model(input_ids=inputs, attention_mask=mask).logits
    loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), labels.flatten(),
                                             ignore_index=-100)
    loss.backward()
    if clip > 0:
      torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss

  sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
  for b in torch_batches[:3]:
    one(b)
  sync()
  times = []
  for _ in range(3):
    t0 = time.perf_counter()
    for b in itertools.islice(itertools.cycle(torch_batches), steps):
      loss = one(b)
    sync()
    times.append((time.perf_counter() - t0) / steps)
  dt = statistics.median(times)
  params = sum(p.numel() for p in model.parameters())
  mean_tokens = float(np.mean(tokens))
  return dict(impl="hf_reference", batch=config.train.batch_size, params=params,
              step_ms=round(dt * 1e3, 3), samples_per_s=round(config.train.batch_size / dt),
              tokens_per_s=round(mean_tokens / dt),
              mfu=mfu(params, mean_tokens / dt), loss=float(loss))


def add_workload_flags(parser: argparse.ArgumentParser, batches: str = "256,1024") -> None:
  """The flags that choose what a step benchmark trains: preset, PE, task, batch sizes."""
  parser.add_argument("--size", default="100m")
  parser.add_argument("--pe", default="rope")
  parser.add_argument("--task", default="add_int")
  parser.add_argument("--batches", default=batches, help="samples per step, comma separated")
  parser.add_argument("--samples_per_row", type=int, default=16)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  add_workload_flags(parser)
  parser.add_argument("--steps", type=int, default=30, help="timed steps per repeat")
  parser.add_argument("--reference", action="store_true", help="also time HF PyTorch Llama")
  parser.add_argument("--reference_batches", default="", help="default: --batches")
  parser.add_argument("--json", default="", help="append one JSON line per result here")
  parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                      help="config override, repeatable: --override model.scan_unroll=8")
  args = parser.parse_args(argv)
  print(f"devices: {jax.devices()}", file=sys.stderr)
  results = []
  for batch in map(int, args.batches.split(",")):
    config = make_config(args.size, args.pe, args.task, batch, args.samples_per_row,
                         args.override)
    results.append(time_nupa(config, 8, args.steps))
    print(json.dumps(results[-1]), flush=True)
  if args.reference:
    for batch in map(int, (args.reference_batches or args.batches).split(",")):
      config = make_config(args.size, args.pe, args.task, batch, args.samples_per_row,
                         args.override)
      results.append(time_reference(config, 8, args.steps))
      print(json.dumps(results[-1]), flush=True)
  if args.json:
    with open(args.json, "a") as f:
      for r in results:
        f.write(json.dumps(r) + "\n")
  print(f"\n{'impl':13} {'batch':>6} {'step ms':>9} {'samples/s':>10} {'tokens/s':>10} {'MFU':>6}")
  for r in results:
    print(f"{r['impl']:13} {r['batch']:6d} {r['step_ms']:9.2f} {r['samples_per_s']:10d} "
          f"{r['tokens_per_s']:10d} {r['mfu']:6.1%}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
