"""Positional encodings (paper §3.2, A.4.3): RoPE vs NoPE vs ALiBi (and the schemes beyond the
paper), trained on 1-8 digits and tested on 1-20, one task at a time.

`--config=configs/pe.py` alone is the paper's 100M RoPE integer-addition run;
`--config=configs/pe.py:pe=alibi,task=add_float,size=tiny` a CPU-sized variant (`size` sets
the model and the budget only). Paper tasks: add_int, add_float, multiply_easy_frac, add_sci.

Arguments: `pe` is any registered positional encoding, or `alibi_nupa`: ALiBi with the
official NUPA code's bias sign (+slope x distance; see nupa_jax/models/posenc/alibi.py), the PE
behind the paper's ALiBi numbers. `reverse` / `hints`: the number format (plain text by
default, as in the paper's PE experiments; configs/formats.py). `offset`: the random training
shift of digit indices of Abacus and coupled positions (-1 keeps the PE's default of 100; 0
fixes a digit's index to its place in its number). `objective`: `answers` (packed rows, loss on
answer tokens) or `official` (the official NUPA code's, configs/common.py). `steps`, `lr`,
`warmup`, `eval_every`, `per_length`: the budget a sweep names (configs/common.py BUDGET_ARGS;
unset: the size's). The README's CPU demo,
`pe=abacus,offset=0,reverse=int,size=tiny`, learns 1-8-digit addition within a few hundred
steps (docs/cpu_demo.md).
"""
from configs import common

def get_config(arg: str | None = None):
  arg = common.parse_arg(arg, pe="rope", task="add_int", size="100m", seed=0, reverse="none",
                         hints=False, offset=-1, objective="answers", **common.BUDGET_ARGS)
  config = common.base(size=arg.size, seed=arg.seed)
  common.set_budget(config, arg)
  common.set_objective(config, arg.objective)
  config.model.posenc = common.posenc(arg.pe)
  if arg.offset >= 0:  # the PE's random training offset of digit indices (Abacus, coupled)
    config.model.posenc["max_offset"] = arg.offset
  config.text.format = {"reverse": arg.reverse, "pad": False, "index_hints": arg.hints}
  config.data.tasks = {arg.task: 1.0}
  config.data.train_digits = (1, 8)
  config.eval.digits = (1, 20)
  return config
