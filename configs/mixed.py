"""All NUPA tasks in one model (the paper's mixed training set, §2.4 / §3.4, trained here from
scratch): every task of the registry with equal weight, each trained on lengths 1..its tier
(20 or 100 digits; `digits=N` caps that at N), evaluated on its whole frozen test range. The
frozen test questions themselves never appear in training (the data pipeline excludes them).

Example: `--config=configs/mixed.py:size=tiny,digits=8`.
"""
from configs import common
from nupa_jax import tasks


def get_config(arg: str | None = None):
  arg = common.parse_arg(arg, size="100m", digits=0, seed=0)
  config = common.base(size=arg.size, seed=arg.seed)
  names = tasks.names()
  cap = lambda tier: min(tier, arg.digits) if arg.digits > 0 else tier
  config.data.tasks = {"all": 1.0}
  config.data.train_digits = (1, cap(20))
  config.data.task_digits = {name: (1, cap(tasks.get(name).max_digits)) for name in names
                             if tasks.get(name).max_digits != 20}
  config.eval.digits = (1, 100)
  return config
