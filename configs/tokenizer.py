"""Tokenizers (paper §3.1, A.4.2): aligned k-digit tokenizers, k = 1, 2, 3, and random
tokenizers with chunks of 1..max_k digits, on integer addition, float addition and integer
multiplication; model sizes 100m / 0.9b / 3b; trained on 1-8 digits.

`--config=configs/tokenizer.py` alone is the paper's 0.9B one-digit integer-addition run;
`tok=3`, `tok=random2`, `align=left` (greedy left-to-right chunks, as BPE tokenizers cut),
`task=add_float|multiply_hard_int`, `size=100m|0.9b|3b|tiny` select the others; `steps`, `lr`,
`warmup`, `eval_every`, `per_length` set the budget a sweep names (configs/common.py
BUDGET_ARGS; unset: the size's).
"""
from configs import common

TOKENIZERS = {
    "1": {"name": "digits", "k": 1},
    "2": {"name": "digits", "k": 2},
    "3": {"name": "digits", "k": 3},
    "random2": {"name": "random", "max_k": 2},
    "random3": {"name": "random", "max_k": 3},
}


def get_config(arg: str | None = None):
  arg = common.parse_arg(arg, tok="1", align="right", task="add_int", size="0.9b", seed=0,
                         **common.BUDGET_ARGS)
  common.choice("tokenizer", arg.tok, tuple(TOKENIZERS))
  config = common.base(size=arg.size, seed=arg.seed)
  common.set_budget(config, arg)
  tokenizer = dict(TOKENIZERS[arg.tok])
  if tokenizer["name"] == "digits":
    tokenizer["align"] = arg.align
  config.text.tokenizer = tokenizer
  config.data.tasks = {arg.task: 1.0}
  config.data.train_digits = (1, 8)
  config.eval.digits = (1, 20)
  return config
