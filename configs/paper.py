"""The paper's training ablations (Section 3, Appendix A.4) as exact recipes, one table at a time.

    --config=configs/paper.py:table=small_dataset_full,task=add_int,pe=rope,seed=1

Every published run of `docs/results/paper_*` is one argument string of this file; a sweep
selects and loops over arguments, it never adds settings of its own.

The paper's protocol (A.4.1), as read here:
- the 0.1B model (`size=100m`), AdamW lr 5e-5, weight decay 0.01, cosine decay, batch 256, the
  other optimizer settings at the Transformers defaults (betas 0.9 / 0.999, eps 1e-8); the
  paper's own training code warms the learning rate up over 500 steps (`warmup`);
- "1e7 samples for each length (where feasible), concatenated, one epoch": the length mix
  (`mix=paper`) gives each length L in 1-8 the weight min(10^7, N(L)), N(L) the number of
  distinct questions of length L (`DISTINCT_QUESTIONS`), so for integer addition 1-3-digit
  questions are ~2 % of the data instead of the uniform mix's 37.5 %; the full budget is the
  sum of those counts (`full_budget`), ~5.1x10^7 samples for integer addition. Within a
  length, samples are drawn with replacement from the task's generator, so a short length gets
  its share of samples but not each distinct question once, as the paper's concatenated set
  has it: the generator draws the shorter operand's length uniformly, so the 18,000
  three-digit questions with a one-digit operand take a third of the 3-digit draws (each about
  18 times over the full budget) and in expectation ~43 % of the 990,000 appear at least once;
- decoding with temperature 0.6 and top-p 0.9 (`decoding=sampled`; `greedy` for greedy
  decoding); "the best checkpoint on validation data is reported": runs keep the checkpoint
  of lowest validation loss (`checkpoint.keep_best`), and the reported evaluation is the final
  one, which for a one-epoch cosine schedule is the lowest-validation-loss step in every run
  published so far (the report shows both).

Arguments (defaults: the paper's protocol; each protocol factor can be flipped on its own):
- `table`: `small_dataset_full` (0.1B, 10^6 samples), `small_model_full` (the 2-layer 1.3M
  model, the full budget), `rope_perf` (0.1B, full budget), `rev_vs_pad` (0.1B, full budget,
  `reverse` x `pad`), `rev_vs_idx` (0.1B, full budget, `reverse` x `hints`);
- `task`, `pe` (a registered PE or `alibi_nupa`, configs/common.py), `seed`;
- `mix`: `paper` or `uniform` (every length 1-8 equally often);
- `warmup`: warmup steps (500, the paper's code; 0 = none);
- `objective`: `answers` (packed rows, loss on answer tokens) or `official` (the official
  code's: one sample a row, the right-padding to the batch's longest sample kept in the loss);
- `decoding`: `sampled` or `greedy`;
- `lr`: learning rate (0 = the paper's 5e-5); `samples`: training samples (0 = the table's
  budget); `batch`: samples a step (0 = the paper's 256), the steps following from `samples`:
  the official code's batch is per device (its default 64), so a run's global batch depends
  on how many GPUs ran it; `reverse`, `pad`, `hints`: the number format (configs/formats.py);
- `random_positions`: 0 (off), or N: each training sample's position ids a sorted random
  draw from [0, N), the official code's `random_position` option (its value: 1024), for a PE
  that has the option (rope, absolute, fire);
- `size`: the model preset (default: the table's; `tiny` for a CPU check of a recipe).
"""
import math

from configs import common
from nupa_jax.models import posenc

MAX_DIGITS = 8  # every table trains on 1-8 digits
SAMPLES_PER_LENGTH = 10**7
PAPER_LR = 5e-5
PAPER_WARMUP = 500
PAPER_BATCH = 256

# Distinct questions of each length that this project's generators can draw, where there are
# fewer than SAMPLES_PER_LENGTH (every other length of 1-8 has more). Integers: the shorter
# operand has floor(L/2) to L digits, a one-digit one any of 0-9: both of one digit (10 x 10);
# two digits with the other of one or two (90 x 90 + 2 x 90 x 10); three with the other of one
# to three (900 x 900 + 2 x 900 x 90 + 2 x 900 x 10). Floats of one digit a part: 81 values
# (d.d, no trailing zero); fractions: the 56 reduced fractions of one-digit parts; scientific
# numbers: 81 mantissas d.d each, and 69 pairs of exponents (the first of 0-8, the second
# within 5 of it). tests/configs/test_paper_config.py checks each count against the
# generators' draws.
DISTINCT_QUESTIONS = {
    "add_int": {1: 100, 2: 9_900, 3: 990_000},
    "add_float": {1: 81**2},
    "multiply_easy_frac": {1: 56**2},
    "add_sci": {1: 81**2 * 69},
}

# Per table: model preset, training samples (None: the full budget), questions per length,
# evaluation spacing in steps (0: only at the end), checkpoint spacing (None: the preset's;
# the ~2-minute 10^6-sample runs checkpoint only at the end).
TABLES = {
    "small_dataset_full": dict(size="100m", samples=10**6, per_length=200, eval_every=0,
                               ckpt_every=0),
    "small_model_full": dict(size="1.3m", samples=None, per_length=200, eval_every=50_000),
    "rope_perf": dict(size="100m", samples=None, per_length=500, eval_every=0),
    "rev_vs_pad": dict(size="100m", samples=None, per_length=500, eval_every=0),
    "rev_vs_idx": dict(size="100m", samples=None, per_length=500, eval_every=0),
}
MIXES = ("paper", "uniform")
DECODINGS = ("sampled", "greedy")


def distinct_questions(task: str, length: int) -> int | None:
  """N(length) where it is below SAMPLES_PER_LENGTH; None where 10^7 samples are feasible."""
  return DISTINCT_QUESTIONS.get(task, {}).get(length)


def length_weights(task: str) -> dict[str, float]:
  """`data.length_weights` of the paper's mix: min(10^7, N(L)) / 10^7 for L = 1..8."""
  return {str(length): min(SAMPLES_PER_LENGTH, distinct_questions(task, length)
                           or SAMPLES_PER_LENGTH) / SAMPLES_PER_LENGTH
          for length in range(1, MAX_DIGITS + 1)}


def full_budget(task: str) -> int:
  """Samples in the paper's concatenated training set: the sum of min(10^7, N(L))."""
  return round(sum(length_weights(task).values()) * SAMPLES_PER_LENGTH)


def get_config(arg: str | None = None):
  arg = common.parse_arg(arg, table="small_dataset_full", task="add_int", pe="rope", seed=0,
                         mix="paper", warmup=PAPER_WARMUP, objective="answers",
                         decoding="sampled", lr=0.0, samples=0, batch=0, reverse="none", pad=False,
                         hints=False, size="", random_positions=0)
  table = TABLES[common.choice("table", arg.table, tuple(TABLES))]
  common.choice("mix", arg.mix, MIXES)
  common.choice("decoding", arg.decoding, DECODINGS)
  common.choice("objective", arg.objective, tuple(common.OBJECTIVES))
  if arg.mix == "paper" and arg.task not in DISTINCT_QUESTIONS:
    raise ValueError(f"mix=paper has question counts for {', '.join(DISTINCT_QUESTIONS)}; "
                     f"{arg.task!r} needs its counts in DISTINCT_QUESTIONS (or mix=uniform)")

  config = common.base(size=arg.size or table["size"], seed=arg.seed)
  config.model.posenc = common.posenc(arg.pe)
  if arg.random_positions:
    options = posenc.options(config.model.posenc["name"])
    if "random_positions" not in options:
      raise ValueError(f"random_positions: positional encoding {arg.pe!r} has no random "
                       f"positions (its options: {', '.join(options) or 'none'})")
    config.model.posenc["random_positions"] = arg.random_positions
  config.text.format = {"reverse": arg.reverse, "pad": arg.pad, "index_hints": arg.hints}
  config.data.tasks = {arg.task: 1.0}
  config.data.train_digits = (1, MAX_DIGITS)
  config.data.length_weights = length_weights(arg.task) if arg.mix == "paper" else {}
  common.set_objective(config, arg.objective)

  samples = arg.samples or table["samples"] or full_budget(arg.task)
  if arg.batch < 0:
    raise ValueError(f"batch={arg.batch}: give samples a step (0 = the paper's 256)")
  if arg.size != "tiny":  # the tiny preset keeps its CPU budget: a recipe check, not a result
    config.train.batch_size = arg.batch or PAPER_BATCH
    config.train.steps = math.ceil(samples / config.train.batch_size)
    config.train.learning_rate = arg.lr or PAPER_LR
    config.train.warmup_steps = arg.warmup
    config.eval.per_length = table["per_length"]
    config.eval.every = table["eval_every"]
    config.checkpoint.every = (table.get("ckpt_every", config.checkpoint.every)
                               or config.train.steps)
  config.eval.digits = (1, 20)
  config.eval.greedy = arg.decoding == "greedy"
  return config
