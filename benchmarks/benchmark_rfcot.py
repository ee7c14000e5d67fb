"""The cost of RF-CoT against direct answers: seconds per sample, tokens generated, context.

    python benchmarks/benchmark_rfcot.py --size=100m --tokenizer=digits
    python benchmarks/benchmark_rfcot.py --size=0.9b --tokenizer=/ckpt/Llama-3.1-8B \
        --direct_batch=256 --rfcot_batch=128 --json=/tmp/rfcot_cost.json

The paper (tab:inference_time; 8B model, A800): 0.371 s/sample answering directly at batch
128, 0.336 at 256, 5.625 with RF-CoT at 128 (~17x slower); direct at 256 used about the memory
of RF-CoT at 128. Here both modes decode with one model (random weights of a preset size:
speed does not depend on the weights) and one text tokenizer, through
`nupa_jax.evaluation.generate` (jitted, KV cache, greedy):
- direct: the paper's text prompt (`task.prompt`), then " answer" and EOS;
- RF-CoT: the rule prompt (nupa_jax.rfcot), then the whole trace and EOS.
A batch generates exactly the tokens of its longest true continuation (EOS is switched off so
that random weights cannot stop early; a trained model's batch also runs until its longest
row ends). Questions are drawn per task at a fixed length; those whose RF-CoT sample exceeds
`--context` positions are redrawn, as in training. Per task and mode it reports s/sample (wall
time of one generate call / batch size, mean of `--rounds` calls after a compile call),
generated tokens per sample (mean true continuation), context used (prompt + continuation,
mean and max), the KV cache's size (with the weights, what decides memory at equal batch),
and the RF-CoT / direct ratio of s/sample; at the end, the device's peak memory over the run.
"""
import json
import time

from absl import app
from absl import flags
import jax
import numpy as np
from flax import nnx

from nupa_jax import models
from nupa_jax import rfcot
from nupa_jax import tasks
from nupa_jax.evaluation import generate as generate_lib

_SIZE = flags.DEFINE_string("size", "100m", "model preset: " + ", ".join(models.PRESETS))
_TOKENIZER = flags.DEFINE_string("tokenizer", "digits",
                                 "char, digits, or a tokenizer.json (or a checkpoint directory)")
_TASKS = flags.DEFINE_list(
    "tasks", ["add_int:10", "add_float:5", "mod_int:6", "max_sci:38", "multiply_hard_int:4"],
    "task:digits pairs")
_DIRECT_BATCH = flags.DEFINE_integer("direct_batch", 256, "prompts per direct-answer batch")
_RFCOT_BATCH = flags.DEFINE_integer("rfcot_batch", 128, "prompts per RF-CoT batch")
_CONTEXT = flags.DEFINE_integer("context", 2048, "positions an RF-CoT sample may take")
_ROUNDS = flags.DEFINE_integer("rounds", 3, "timed generate calls per task and mode")
_ATTENTION = flags.DEFINE_enum("attention", "xla", ["xla", "cudnn"], "attention implementation")
_SEED = flags.DEFINE_integer("seed", 0, "question seed")
_JSON = flags.DEFINE_string("json", "", "also write the results here")

_ROUND = 8  # prompt widths are rounded up to this, as the evaluator does


def questions(task: str, digits: int, count: int, encoder: rfcot.Encoder,
              rng: np.random.Generator) -> tuple[list[tuple[str, str | None, str]], int]:
  """`count` questions whose RF-CoT sample fits the context, and how many were redrawn."""
  t = tasks.get(task)
  out, dropped = [], 0
  while len(out) < count:
    a, b = t.sample(rng, digits)
    answer = t.solve(a, b)
    if encoder.fits(encoder.encode(task, a, b, answer)[0]):
      out.append((a, b, answer))
    else:
      dropped += 1
      if dropped > 50 * count:
        raise ValueError(f"{task} at {digits} digits: RF-CoT samples do not fit "
                         f"{encoder.context} positions; lower the digits or raise --context")
  return out, dropped


def direct_sample(encoder: rfcot.Encoder, task: str, a: str, b: str | None,
                  answer: str) -> tuple[list[int], list[int]]:
  """(prompt ids, continuation ids) of the paper's direct-answer text prompt."""
  ids, mask = encoder.encode_text(tasks.get(task).prompt(a, b), " " + answer)
  return ids[~mask].tolist(), ids[mask].tolist()


def rfcot_sample(encoder: rfcot.Encoder, task: str, a: str, b: str | None,
                 answer: str) -> tuple[list[int], list[int]]:
  ids, mask = encoder.encode(task, a, b, answer)
  return ids[~mask].tolist(), ids[mask].tolist()


def _peak_bytes() -> int | None:
  stats = jax.local_devices()[0].memory_stats() or {}
  return stats.get("peak_bytes_in_use")


def time_mode(model, config: models.ModelConfig, samples: list[tuple[list[int], list[int]]],
              pad_id: int, rounds: int) -> dict:
  """Times generating every sample's continuation after its prompt, as one batch."""
  batch = len(samples)
  width = -(-max(len(p) for p, _ in samples) // _ROUND) * _ROUND
  new_tokens = max(len(c) for _, c in samples)
  prompts = np.full((batch, width), pad_id, np.int32)
  lengths = np.zeros(batch, np.int32)
  for i, (prompt, _) in enumerate(samples):
    prompts[i, :len(prompt)] = prompt
    lengths[i] = len(prompt)

  def run():
    return generate_lib.generate(model, prompts, lengths, max_new_tokens=new_tokens,
                                 eos_id=-1, pad_id=pad_id).block_until_ready()

  run()  # compile
  start = time.perf_counter()
  for _ in range(rounds):
    run()
  seconds = (time.perf_counter() - start) / rounds
  cache_bytes = (2 * config.num_layers * batch * (width + new_tokens) * config.kv_heads
                 * config.head_dim * np.dtype(config.dtype).itemsize)
  used = [len(p) + len(c) - 1 for p, c in samples]  # EOS is generated, never read
  return {"batch": batch, "s_per_sample": seconds / batch, "s_per_batch": seconds,
          "generated_per_sample": float(np.mean([len(c) for _, c in samples])),
          "max_new_tokens": new_tokens, "prompt_width": width,
          "context_mean": float(np.mean(used)), "context_max": int(max(used)),
          "kv_cache_gib": cache_bytes / 2**30}


def main(argv):
  del argv
  encoder = rfcot.Encoder(_TOKENIZER.value, _CONTEXT.value)
  # Inference weights in the compute dtype (bfloat16 from 100m up), as a served model's.
  compute = models.resolve({"preset": _SIZE.value}, encoder.vocab_size).dtype
  config = models.resolve({"preset": _SIZE.value, "attention_impl": _ATTENTION.value,
                           "param_dtype": compute}, encoder.vocab_size)
  model = models.build(config, encoder.vocab_size, rngs=nnx.Rngs(0))
  split = nnx.split(model)
  weights = sum(x.nbytes for x in jax.tree.leaves(split[1]))
  print(f"device {jax.devices()[0].device_kind}; model {_SIZE.value} "
        f"({models.count_params(config, encoder.vocab_size):,} parameters, {config.dtype}); "
        f"tokenizer {_TOKENIZER.value} (vocab {encoder.vocab_size}); weights "
        f"{weights / 2**30:.2f} GiB")
  header = (f"{'task':22s} {'mode':7s} {'batch':>5s} {'s/sample':>9s} {'gen/sample':>10s} "
            f"{'ctx mean':>8s} {'ctx max':>7s} {'KV GiB':>7s}")
  print(header)
  results = []
  rng = np.random.default_rng(_SEED.value)
  for item in _TASKS.value:
    name, _, digits = item.partition(":")
    task, digits = tasks.get(name).name, int(digits)
    count = max(_DIRECT_BATCH.value, _RFCOT_BATCH.value)
    qs, dropped = questions(task, digits, count, encoder, rng)
    row = {"task": task, "digits": digits, "redrawn_over_context": dropped}
    for mode, batch, make in (("direct", _DIRECT_BATCH.value, direct_sample),
                              ("rfcot", _RFCOT_BATCH.value, rfcot_sample)):
      r = time_mode(split, config, [make(encoder, task, *q) for q in qs[:batch]],
                    encoder.pad_id, _ROUNDS.value)
      row[mode] = r
      print(f"{task:22s} {mode:7s} {batch:5d} {r['s_per_sample']:9.5f} "
            f"{r['generated_per_sample']:10.1f} {r['context_mean']:8.1f} {r['context_max']:7d} "
            f"{r['kv_cache_gib']:7.2f}")
    row["ratio"] = row["rfcot"]["s_per_sample"] / row["direct"]["s_per_sample"]
    print(f"{task:22s} RF-CoT / direct s/sample: {row['ratio']:.1f}x "
          f"({dropped} questions redrawn over {_CONTEXT.value} positions)")
    results.append(row)
  ratios = [r["ratio"] for r in results]
  peak = _peak_bytes()
  print(f"mean RF-CoT / direct: {np.mean(ratios):.1f}x (paper: 5.625 / 0.371 = 15.2x at equal "
        "batch 128, 16.7x against direct at 256); device peak memory over the run: "
        + ("unknown" if peak is None else f"{peak / 2**30:.2f} GiB"))
  if _JSON.value:
    with open(_JSON.value, "w") as f:
      json.dump({"device": jax.devices()[0].device_kind, "size": _SIZE.value,
                 "tokenizer": _TOKENIZER.value, "vocab_size": encoder.vocab_size,
                 "weights_gib": weights / 2**30,
                 "peak_gib": None if peak is None else peak / 2**30, "results": results},
                f, indent=1)


if __name__ == "__main__":
  app.run(main)
