"""Number formats (paper §3.3, A.4.4): reverse formatting x zero padding (`tab:rev_vs_pad`:
integer and float addition) and reverse formatting x index hints (`tab:rev_vs_idx`: integer
addition, multiplication and maximum); 0.1B models trained on 1-8 digits, tested beyond.

`reverse` is the paper's variant: none, int, dec, each, total (Table 4); `pad` zero-pads the
operands to a common width; `hints` prefixes every digit with its index hint, and
`hint_offset=K` shifts a training sample's hints by an offset drawn from 0..K, so that the hint
tokens of lengths up to 8 + K are trained (without it a test length past 8 meets a hint token
no training sample held); `pe` is the
positional encoding (as in configs/pe.py; RoPE, the paper's default architecture, unless set:
the paper does not say which PE its format tables used, and RoPE's 9-digit cliff hides every
format's effect on length generalization, see docs/results/formats/).
`test` is the longest evaluated length (20); `steps`, `lr`, `warmup`, `eval_every`,
`per_length` the budget a sweep names (configs/common.py BUDGET_ARGS; unset: the size's).
Example: `--config=configs/formats.py:task=add_float,reverse=each,pad=true,size=tiny`.
"""
from configs import common


def get_config(arg: str | None = None):
  arg = common.parse_arg(arg, task="add_int", reverse="none", pad=False, hints=False,
                         hint_offset=0, pe="rope", size="100m", seed=0, test=20,
                         **common.BUDGET_ARGS)
  if arg.test < 1:
    raise ValueError(f"config argument test={arg.test}: the longest evaluated length, >= 1")
  config = common.base(size=arg.size, seed=arg.seed)
  common.set_budget(config, arg)
  config.model.posenc = common.posenc(arg.pe)
  config.text.format = {"reverse": arg.reverse, "pad": arg.pad, "index_hints": arg.hints}
  if arg.hint_offset:
    config.text.format["hint_offset"] = arg.hint_offset
  config.data.tasks = {arg.task: 1.0}
  config.data.train_digits = (1, 8)
  config.eval.digits = (1, arg.test)
  return config
