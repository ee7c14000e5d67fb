"""Length generalization past the benchmark ("beyond the paper"): integer addition
trained on 1-20 digits and tested to 100 — the benchmark's test lengths up to 20, then every
`stride`-th length past them (`config.eval.beyond_digits`; 21 always) — one positional encoding
per run, all under the same text format so that the PEs compare on equal terms.

Arguments:
- `pe`: any registered positional encoding (`posenc.names()`: abacus, absolute, alibi, coupled,
  fire, nope, rope); rope / nope / alibi are the paper's.
- `random`: `auto` (default) randomizes positions the way each scheme's length-generalization
  recipe does, `on` wherever the PE supports it, `off` nowhere. The option set is the one the
  PE has (`posenc.options`):
  - `max_offset` (abacus, coupled): one random shift of a sample's digit indices /
    significances, uniform in [0, OFFSET = 100]. Abacus (McLeish et al. 2024, "Transformers Can
    Do Arithmetic with the Right Embeddings") trains on 20 digits with offsets up to k = 100
    and extrapolates to 100-digit addition: the offset must carry the training lengths over
    the test lengths (rows up to 21 + k are trained; a 100-digit question needs rows up to
    its 101-digit answer). Position coupling (Cho et
    al. 2024) draws a random starting position id for the same reason; we use the same range.
  - `random_positions` (rope, absolute, fire): each training sample's
    positions are a sorted random subset of [0, RANDOM_POSITIONS = 1024) (Ruoss et al. 2023),
    a range past the longest evaluated sample (~305 tokens at 100 digits, ~605 with index
    hints), as their method requires. The FIRE recipe of Zhou et al. 2024 ("Transformers Can
    Achieve Length Generalization But Not Robustly": FIRE + randomized positions + reversed
    format + index hints) is `pe=fire,hints=true` with `random=auto`.
  `auto` randomizes abacus, coupled and fire (their recipes) and leaves the paper's PEs (and
  absolute) as published; `on` for a PE with neither option raises.
- `reverse` (default `int`: integers written units first, operands and answer — the Abacus and
  coupling papers' format; `none` is the NUPA paper's plain text), `hints` (index hints, Zhou
  et al.): the text format of every PE in a comparison. Abacus needs units-first numbers for its
  indices to align digits of equal significance; coupled positions need units-first answers to
  continue them through generation (the evaluator refuses otherwise).
- `train` / `test`: the longest training / evaluated length (20 / 100); `stride`: spacing of
  the evaluated lengths past the benchmark's range (1 = every length; 5: 21, 25, 30, ..., 100;
  the benchmark's own test lengths up to `test` are all evaluated).
- `task` (add_int; any integer or float task extends past the benchmark), `size`, `seed`.

FIRE's learned bias keeps its attention off cuDNN's kernel; its integer-addition runs attend
within a band that holds their longest training sample (`model.attention_span`, the sum of two
`train`-digit numbers of nines in the run's format), which trains ~1.2x as fast as attention
over whole packed rows in XLA, with the same math (docs/benchmarks/README.md).

Example: `--config=configs/beyond.py:pe=abacus,size=tiny`. Budgets (steps, batch, questions
per length) come from `size` as in every family; a sweep names its GPU budget with `steps`,
`lr`, `warmup`, `eval_every`, `per_length` (configs/common.py BUDGET_ARGS).
"""
import numpy as np

from configs import common
from nupa_jax import data
from nupa_jax import tasks
from nupa_jax.models import posenc

OFFSET = 100
RANDOM_POSITIONS = 1024
# PEs whose length-generalization recipe randomizes positions (`random=auto`).
RANDOMIZED_RECIPES = ("abacus", "coupled", "fire")
RANDOM_MODES = ("auto", "on", "off")


def beyond_lengths(train: int, test: int, stride: int) -> tuple[int, ...]:
  """Evaluated lengths past `train`: train + 1, then every `stride`-th length down from `test`."""
  if stride < 1 or test <= train:
    raise ValueError(f"need stride >= 1 and test > train, got stride={stride}, train={train}, "
                     f"test={test}")
  return tuple(sorted({train + 1, *range(test, train, -stride)}))


def posenc_config(pe: str, random: str) -> dict:
  """`config.model.posenc` for PE `pe` with randomization `random` (see the module docstring)."""
  if pe not in posenc.names():
    raise ValueError(f"unknown positional encoding {pe!r}; known: {', '.join(posenc.names())}")
  if random not in RANDOM_MODES:
    raise ValueError(f"random={random!r}; known: {', '.join(RANDOM_MODES)}")
  options = posenc.options(pe)
  on = random == "on" or (random == "auto" and pe in RANDOMIZED_RECIPES)
  out = {"name": pe}
  if "max_offset" in options:
    out["max_offset"] = OFFSET if on else 0
  elif "random_positions" in options:
    if on:
      out["random_positions"] = RANDOM_POSITIONS
  elif random == "on":
    raise ValueError(f"random=on: positional encoding {pe!r} has no random offsets or positions "
                     f"(options: {', '.join(options) or 'none'}); use random=auto or off")
  return out


def longest_addition(config, digits: int) -> int:
  """Positions of the longest integer addition of up to `digits`-digit operands in the config's
  text: both operands all nines, whose sum is a digit longer."""
  nines = "9" * digits
  answer = tasks.get("add_int").solve(nines, nines)
  _, encoder = data.run_config(config)
  tokens = encoder.encode("add_int", nines, nines, answer, np.random.default_rng(0))[0]
  return len(tokens) - 1


def get_config(arg: str | None = None):
  arg = common.parse_arg(arg, pe="abacus", random="auto", reverse="int", hints=False,
                         task="add_int", train=20, test=100, stride=1, size="100m", seed=0,
                         **common.BUDGET_ARGS)
  config = common.base(size=arg.size, seed=arg.seed)
  common.set_budget(config, arg)
  config.model.posenc = posenc_config(arg.pe, arg.random)
  config.text.format = {"reverse": arg.reverse, "pad": False, "index_hints": arg.hints}
  config.data.tasks = {arg.task: 1.0}
  config.data.train_digits = (1, arg.train)
  config.eval.digits = (1, arg.test)  # the test lengths within the benchmark, all of them
  config.eval.beyond_digits = beyond_lengths(arg.train, arg.test, arg.stride)
  if arg.pe == "fire" and arg.task == "add_int":
    config.model.attention_span = longest_addition(config, arg.train)
  return config
