"""Shared defaults of every experiment family, and the `file.py:a=1,b=x` argument parser.

Each family file (pe.py, tokenizer.py, ...) starts from `base(size=...)` and changes only what
its ablation varies, so a diff between two configs is exactly the experiment's variable. The
per-size training settings follow the paper (Appendix A.4.1: AdamW, lr 5e-5, weight decay 0.01,
cosine decay, batch 256 / 64 / 32 for 0.1B / 0.9B / 3B, one epoch of 1e7 samples per length);
`tiny` is sized instead for a 2-core laptop CPU: 4,000 steps of 32 samples, in which the README's
demo recipe (configs/pe.py) learns 1-8-digit addition. A size sets the model and the budget only.
"""
from __future__ import annotations

import dataclasses

import ml_collections

from nupa_jax import data
from nupa_jax import models
from nupa_jax import sharding

# Logical parameter axes -> mesh axes: nupa_jax.sharding's defaults (FSDP on `embed`,
# Megatron tensor parallelism on heads / mlp / vocab), overridable per run.
MESH_RULES = sharding.DEFAULT_RULES

# Per-size training settings. Paper presets: batch from A.4.1, steps = one epoch of 1e7
# samples for each of the 8 training lengths. `tiny` is sized for ten minutes on a 2-core CPU;
# how its settings were chosen, and what else was tried, is in docs/cpu_demo.md.
_TRAIN = {
    "tiny": dict(steps=4000, batch_size=32, learning_rate=4e-4, warmup_steps=200, b2=0.98,
                 samples_per_row=4, eval_every=0, per_length=100, ckpt_every=1000,
                 log_every=500),
    "1.3m": dict(steps=100_000, batch_size=256, learning_rate=1e-3, warmup_steps=1000,
                 eval_every=10_000, per_length=1000, ckpt_every=5000, log_every=100),
    "100m": dict(steps=312_500, batch_size=256, learning_rate=5e-5, warmup_steps=0,
                 eval_every=25_000, per_length=1000, ckpt_every=5000, log_every=100),
    "0.9b": dict(steps=1_250_000, batch_size=64, learning_rate=5e-5, warmup_steps=0,
                 eval_every=100_000, per_length=1000, ckpt_every=10_000, log_every=100),
    "3b": dict(steps=2_500_000, batch_size=32, learning_rate=5e-5, warmup_steps=0,
               eval_every=200_000, per_length=1000, ckpt_every=10_000, log_every=100),
}
SIZES = tuple(_TRAIN)

# Model fields that differ from `models.PRESETS` for a training run of that size. Tiny: 4 query
# and 2 KV heads of 64 (the preset: of 32) and an MLP of 256, at the preset's 567,680
# parameters. 8 heads of 32 (same FLOPs) learn as much per step but run 35 % slower on a CPU:
# within ten minutes they reached 0.89 / 0.845 / 0.83 (6,500 steps, seeds 0 / 1 / 2).
_MODEL_OVERRIDES = {"tiny": dict(mlp=256, heads=4, kv_heads=2, head_dim=64)}



# `pe` argument values that are a registered PE with options rather than a PE of their own.
PE_VARIANTS = {"alibi_nupa": {"name": "alibi", "reward_distance": True}}


def posenc(pe: str) -> dict:
  """`config.model.posenc` for a family's `pe` argument.

  `pe` is a registered PE or a PE_VARIANTS key; unknown names fail when the model is built,
  with the registry's list.
  """
  return dict(PE_VARIANTS.get(pe, {"name": pe}))


# Training objectives (the `objective` argument): what a row holds and which tokens the loss
# reads. `answers`: packed rows, loss on answer tokens; `official`: the official NUPA code's,
# one sample a row with the right-padding to the batch's longest sample kept in the loss.
OBJECTIVES = {
    "answers": dict(packing="packed", loss_on_padding=False),
    "official": dict(packing="padded", loss_on_padding=True),
}

# Budget arguments of the families a GPU sweep sizes (pe, formats, tokenizer, beyond): a sweep
# names its recipe with them (`configs/pe.py:size=100m,steps=3907,per_length=200`) instead of
# overriding config fields. 0 (-1 for warmup and eval_every, where 0 means none / only at the
# end) keeps the size's value.
BUDGET_ARGS = dict(steps=0, lr=0.0, warmup=-1, eval_every=-1, per_length=0)


def choice(name: str, value: str, known) -> str:
  """`value` if it is one of `known`, else a ValueError that lists them."""
  if value not in known:
    raise ValueError(f"unknown {name} {value!r}; known: {', '.join(known)}")
  return value


def set_objective(config: ml_collections.ConfigDict, name: str) -> None:
  """Sets `config.data`'s row layout and loss to those of objective `name` (OBJECTIVES)."""
  objective = OBJECTIVES[choice("objective", name, tuple(OBJECTIVES))]
  config.data.packing = objective["packing"]
  config.data.loss_on_padding = objective["loss_on_padding"]


def set_budget(config: ml_collections.ConfigDict, arg: ml_collections.ConfigDict) -> None:
  """Sets the training and evaluation budget the BUDGET_ARGS of `arg` give."""
  if arg.steps < 0 or arg.lr < 0 or arg.per_length < 0:
    raise ValueError("config arguments steps, lr and per_length must be >= 0 (0: the size's)")
  if arg.warmup < -1 or arg.eval_every < -1:
    raise ValueError("config arguments warmup and eval_every must be >= -1 (-1: the size's)")
  if arg.steps:
    config.train.steps = arg.steps
  if arg.lr:
    config.train.learning_rate = arg.lr
  if arg.warmup >= 0:
    config.train.warmup_steps = arg.warmup
  if arg.eval_every >= 0:
    config.eval.every = arg.eval_every
  if arg.per_length:
    config.eval.per_length = arg.per_length


def parse_arg(arg: str | None, **defaults) -> ml_collections.ConfigDict:
  """Parses `"a=1,b=x"` into a ConfigDict over `defaults`, typed like the defaults.

  Every key must be one of `defaults` (a typo must not silently run the default experiment);
  values take the default's type (`int`, `float`, `bool` from true/false, else `str`).
  """
  out = ml_collections.ConfigDict(dict(defaults))
  for item in filter(None, (arg or "").split(",")):
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep:
      raise ValueError(f"config argument {item!r} is not of the form key=value")
    if key not in defaults:
      raise ValueError(
          f"unknown config argument {key!r}; known: {', '.join(sorted(defaults))}")
    out[key] = _typed(value.strip(), defaults[key], key)
  return out


def _typed(value: str, default, key: str):
  """Converts a command-line string to the type of `default`."""
  if isinstance(default, bool):
    if value.lower() not in ("true", "false", "1", "0"):
      raise ValueError(f"config argument {key}={value!r}: expected true or false")
    return value.lower() in ("true", "1")
  if isinstance(default, (int, float)):
    try:
      return type(default)(value)
    except ValueError:
      raise ValueError(
          f"config argument {key}={value!r}: expected {type(default).__name__}") from None
  return value


def model(size: str) -> ml_collections.ConfigDict:
  """Every field of `models.ModelConfig`, at the values of preset `size`.

  Spelled out rather than `preset=size` so that each is overridable from the command line
  (`--config.model.hidden=256`) and visible in the run's config.json.
  """
  fields = {f.name: f.default for f in dataclasses.fields(models.ModelConfig)
            if f.default is not dataclasses.MISSING and f.name != "posenc"}
  fields.update(models.PRESETS[size])
  fields.update(_MODEL_OVERRIDES.get(size, {}))
  if isinstance(fields.get("scan_unroll"), bool):  # True = all layers; an int stays overridable
    fields["scan_unroll"] = fields["num_layers"] if fields["scan_unroll"] else 1
  head_dim = fields.pop("head_dim", None)
  m = ml_collections.ConfigDict(fields)
  m.head_dim = ml_collections.config_dict.placeholder(int)  # None: hidden // heads
  m.head_dim = head_dim
  m.posenc = {"name": "rope"}
  return m


def base(size: str = "100m", seed: int = 0) -> ml_collections.ConfigDict:
  """Every field the trainer reads, with the paper's defaults for model `size`."""
  if size not in _TRAIN:
    raise ValueError(f"unknown size {size!r}; known: {', '.join(SIZES)}")
  t = _TRAIN[size]
  c = ml_collections.ConfigDict()
  c.seed = seed  # the run's seed: model initialisation, training-time randomness and the data
  # `config.init_from`: another run's workdir (its latest checkpoint) or a checkpoint step
  # directory; its model parameters start this run (the optimizer and data start fresh).
  c.init_from = ""

  c.model = model(size)

  c.text = ml_collections.ConfigDict()
  c.text.tokenizer = {"name": "digits", "k": 1, "align": "right"}
  c.text.format = {"reverse": "none", "pad": False, "index_hints": False}

  c.data = data.defaults()  # fields documented in nupa_jax/data/__init__.py
  c.data.samples_per_row = t.get("samples_per_row", c.data.samples_per_row)
  c.data.tasks = {"add_int": 1.0}
  c.data.train_digits = (1, 8)

  c.train = ml_collections.ConfigDict()
  c.train.steps = t["steps"]
  c.train.batch_size = t["batch_size"]  # samples per step (the paper's), as the pipeline batches
  c.train.log_every = t["log_every"]
  c.train.optimizer = "adamw"
  c.train.learning_rate = t["learning_rate"]
  c.train.schedule = "cosine"
  c.train.warmup_steps = t["warmup_steps"]
  c.train.end_lr_ratio = 0.0  # cosine decays to learning_rate * end_lr_ratio
  c.train.b1 = 0.9
  c.train.b2 = t.get("b2", 0.999)
  c.train.eps = 1e-8
  c.train.weight_decay = 0.01
  c.train.mu_dtype = ""  # dtype of Adam's first moment ("" = the parameters'); bfloat16 saves
                         # a quarter of the optimizer's memory traffic, off the paper's recipe
  c.train.grad_clip = 1.0  # global-norm clipping; 0 disables
  c.train.microbatches = 1  # >1: each step's rows in parts, gradients added (less memory)
  # Steps in one call of the jitted step (host time): 0 = automatic, 1 on one device, and on a
  # process driving several GPUs or TPUs 4, else 2, else 1 (training/settings.py).
  c.train.steps_per_call = 0
  # Speed settings that keep the numbers, on where measured faster: the 100m step at batch
  # 256 takes 8.2 ms with the three against 9.2 ms without (docs/benchmarks/README.md).
  measured_faster = size == "100m"
  c.model.fused_projections = c.model.split_layers = measured_faster
  c.train.gpu_triton_gemm = not measured_faster
  c.train.gpu_overlap_collectives = False  # XLA's latency-hiding scheduler (multi-GPU steps)

  c.eval = ml_collections.ConfigDict()
  c.eval.every = t["eval_every"]  # 0: only at the end
  c.eval.per_length = t["per_length"]  # test questions per task and length; 0 = val loss only
  c.eval.digits = (1, 20)  # evaluated lengths (intersected with each task's test lengths)
  c.eval.task_digits = {}  # {task: (lo, hi)}: a task's evaluated lengths instead of `digits`
  c.eval.beyond_digits = ()  # lengths past each task's benchmark range (int / float tasks)
  c.eval.tasks = ()  # () = the training tasks
  c.eval.test_dir = ""  # "" = regenerate the frozen test set in memory from data.test_seed, the
                        # benchmark's seed (`benchmark build --seed`)
  c.eval.batch_size = 256  # prompts per generation batch
  c.eval.greedy = True  # False: the paper's sampling below
  c.eval.temperature = 0.6
  c.eval.top_p = 0.9
  c.eval.sample_seed = 0
  c.eval.validation_batches = 8  # batches of the validation stream for validation loss
  c.eval.learned_digits_rule = "prefix"  # "official": the paper's tables' (metrics.learned_digits)
  c.eval.dlength_rule = "parts"  # "total": the official text scorer's (metrics.DLENGTH_RULES)
  c.eval.positions = "consecutive"  # "training" / "training_longest": ids drawn as
                                   # random_positions trains (evaluation.positions; diagnostics,
                                   # not the paper's)

  c.checkpoint = ml_collections.ConfigDict()
  c.checkpoint.every = t["ckpt_every"]
  c.checkpoint.keep = 2  # latest checkpoints kept (besides the best by validation loss)
  c.checkpoint.keep_best = True
  c.checkpoint.async_save = True

  c.mesh = ml_collections.ConfigDict()
  c.mesh.shape = {"data": -1, "fsdp": 1, "tensor": 1}  # -1 = the rest of the devices
  c.mesh.rules = MESH_RULES
  # AdamW's moments and update split over `data` too (ZeRO stage 1, sharding.optimizer_rules).
  c.mesh.shard_optimizer_over_data = False
  return c
