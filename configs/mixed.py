"""All NUPA tasks in one model (the paper's mixed training set, §2.4 / §3.4, trained here from
scratch): every task of the registry with equal weight, each trained on lengths 1..its tier
(20 or 100 digits; `digits=N` caps that at N), evaluated on its whole frozen test range. The
frozen test questions themselves never appear in training (the data pipeline excludes them).

Example: `--config=configs/mixed.py:size=tiny,digits=8`.

Arguments besides `size`, `digits` and `seed`: `samples` (training samples, rounded up to whole
batches; 0 = the preset's steps), `per_length` (test questions per task and length; 0 = the
preset's), `eval_every` (steps between evaluations; 0 = only at the end, -1 = the preset's),
`scoring` (`nupa`: this project's well-learned digit and dlength rules; `paper`:
the rules the paper's tables were computed with, `learned_digits_rule="official"` and
`dlength_rule="total"`, for rows placed beside the paper's, docs/results/generalist).
"""
import math

from configs import common
from nupa_jax import tasks

SCORING = {
    "nupa": {},  # configs/common.py's rules
    "paper": dict(learned_digits_rule="official", dlength_rule="total"),
}


def get_config(arg: str | None = None):
  arg = common.parse_arg(arg, size="100m", digits=0, seed=0, samples=0, per_length=0,
                         eval_every=-1, scoring="nupa")
  common.choice("scoring", arg.scoring, tuple(SCORING))
  config = common.base(size=arg.size, seed=arg.seed)
  names = tasks.names()
  cap = lambda tier: min(tier, arg.digits) if arg.digits > 0 else tier
  config.data.tasks = {"all": 1.0}
  config.data.train_digits = (1, cap(20))
  config.data.task_digits = {name: (1, cap(tasks.get(name).max_digits)) for name in names
                             if tasks.get(name).max_digits != 20}
  config.eval.digits = (1, 100)
  # Rows of ~2,100 positions: cuDNN attends within each sample's segment, not over the whole
  # row with a mask (1.2x the step on H200s, docs/benchmarks; the same math).
  config.model.cudnn_segments = config.data.samples_per_row + 1
  if arg.samples:
    config.train.steps = math.ceil(arg.samples / config.train.batch_size)
  if arg.per_length:
    config.eval.per_length = arg.per_length
  if arg.eval_every >= 0:
    config.eval.every = arg.eval_every
  for field, value in SCORING[arg.scoring].items():
    config.eval[field] = value
  return config
