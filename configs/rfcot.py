"""Rule-following chain of thought (paper §4, appendix "Rule-following Chain-of-thought"):
train on RF-CoT samples — the rule's code in the prompt, its step-by-step execution as the
response, loss on the response only — and score the answer after "So the answer is".

    --config=configs/rfcot.py                             from scratch: 100M, char tokens
    --config=configs/rfcot.py:size=tiny,tasks=add_int     a CPU-sized variant
    --config=configs/rfcot.py:model=/ckpt/Llama-3.1-8B    finetune a pretrained checkpoint with
                                                          its own tokenizer.json

Arguments: `model` (`scratch`, or a Hugging Face checkpoint directory), `tokenizer` (`char`,
`digits` or a tokenizer.json path; from-scratch runs only), `tasks` (`table`: the 22 tasks of
the paper's tab:rfft_max_length; `rfft`: the four of tab:rfft_performance; or names joined by
`+`: `add_int+max_sci`), `size` (model preset and training settings of configs/common.py),
`context` (positions a sample may take; the paper dropped samples over 2000 tokens),
`per_length` (test questions per task and length; every one generates a whole trace),
`samples` (training samples, rounded up to whole batches; 0 = the preset's steps), `seed`,
`lr`, `warmup`, `eval_every` and `steps` (configs/common.py BUDGET_ARGS; unset: the size's; a
short from-scratch schedule needs a larger learning rate than the preset's 5e-5, which the
paper sized for 312,500 steps; `steps` and `samples` are two ways to say one thing: give one),
`cells` (`all`: every test length of each task whose trace fits; `table`: only the digit
cells of tab:rfft_performance, for its tasks), and `answer`: `rfcot`, or `direct` for the
comparison model of the paper's table, a from-scratch model of the same size trained on the
same tasks and sample budget to answer directly (one-digit tokens, packed rows, every length
of each task's benchmark range, as the paper's Llama-8B-ft saw the whole mixed training set).

The RF-CoT data mode (nupa_jax/rfcot/data.py) turns `config.text.tokenizer = {"name":
"rfcot", ...}` into one sample a row of `context` positions, cuts each task's lengths
(`config.data.task_digits`, here every length of the task) to those that fit, and drops and
counts the samples that still do not.
"""
import math

from configs import common
from nupa_jax import tasks
from nupa_jax.rfcot import cot

# tab:rfft_performance's tasks (add float, multiply fraction, max scientific, mod integer) and
# its digit cells: the three lengths the table scores per task.
RFFT_CELLS = {"add_float": (5, 7), "multiply_hard_frac": (2, 4), "max_sci": (38, 40),
              "mod_int": (6, 8)}
RFFT_TASKS = tuple(RFFT_CELLS)
ANSWERS = ("rfcot", "direct")
CELLS = ("all", "table")


def _task_names(spec: str) -> tuple[str, ...]:
  if spec == "table":
    return cot.TABLE_TASKS
  if spec == "rfft":
    return RFFT_TASKS
  return tuple(tasks.get(n.strip()).name for n in spec.split("+") if n.strip())


def get_config(arg: str | None = None):
  arg = common.parse_arg(arg, model="scratch", tokenizer="char", tasks="table", size="100m",
                         context=2048, seed=0, samples=0, answer="rfcot",
                         cells="all", **{**common.BUDGET_ARGS, "per_length": 20})
  if arg.steps and arg.samples:
    raise ValueError("give the budget as `samples` or as `steps`, not both")
  common.choice("answer", arg.answer, ANSWERS)
  common.choice("cells", arg.cells, CELLS)
  names = _task_names(arg.tasks)
  config = _rfcot(arg, names) if arg.answer == "rfcot" else _direct(arg, names)
  config.eval.digits = (1, 100)  # each task's test lengths; samples over the context are left out
  if arg.cells == "table":
    others = [n for n in names if n not in RFFT_CELLS]
    if others:
      raise ValueError(f"cells=table scores tab:rfft_performance's digit cells, which "
                       f"{', '.join(others)} has none of: use tasks=rfft or some of its tasks")
    config.eval.task_digits = {name: RFFT_CELLS[name] for name in names}
  common.set_budget(config, arg)  # steps, lr, warmup, eval_every; per_length differs here:
  config.eval.per_length = arg.per_length  # 0 means no test questions, not the size's
  if arg.samples:
    if arg.samples < 0:
      raise ValueError("config argument samples must be >= 0 (0: the size's steps)")
    config.train.steps = math.ceil(arg.samples / config.train.batch_size)
  return config


def _direct(arg, names):
  """The direct-answer model: the preset's text settings on the same tasks."""
  if arg.model != "scratch":
    raise ValueError("answer=direct trains from scratch: leave `model` at scratch")
  config = common.base(size=arg.size, seed=arg.seed)
  config.data.tasks = {name: 1.0 for name in names}
  config.data.task_digits = {name: (1, tasks.get(name).max_digits) for name in names}
  return config


def _rfcot(arg, names):
  config = common.base(size=arg.size, seed=arg.seed)
  pretrained = arg.model != "scratch"
  # A pretrained model reads its own tokenizer; the pretrained loader builds the model from the
  # same directory (`config.pretrained`) instead of config.model.
  config.pretrained = arg.model if pretrained else ""
  config.text.tokenizer = {"name": "rfcot", "context": arg.context,
                           "text_tokenizer": arg.model if pretrained else arg.tokenizer}
  for name in names:
    cot.rule_name(name)  # ValueError for a task without an RF-CoT rule
  config.data.tasks = {name: 1.0 for name in names}
  config.data.task_digits = {name: (1, tasks.get(name).max_digits) for name in names}
  config.data.packing = "padded"
  config.data.seq_len = arg.context
  config.model.max_len = arg.context
  if not pretrained:
    # One sample a row of `context` positions makes a step of batch x context tokens, 7-15x
    # the packed 272-position rows the presets were sized for. A layer of the 100m preset keeps
    # ~35 KB a token for its backward pass in bf16 (normed input, q / k / v, attention output,
    # gate / up / their product): 8 layers x 256 rows x 2,048 positions is ~150 GB, more
    # than an H200 holds (an estimate, not a measurement). Recomputing each layer in the
    # backward pass keeps only the layer inputs; the gradients are the same. Four microbatches
    # of 64 rows keep a quarter of that at a time (estimated: ~4 GB of layer inputs and ~9 GB
    # for the layer being recomputed), so a step fits an 80 GB card too.
    config.model.remat = "full"
    config.train.microbatches = 4
    # A row holds one trace, then padding: cuDNN attends within each of the two segments, not
    # over the whole row with a mask (1.4x the step on an H200, docs/benchmarks; same math).
    config.model.cudnn_segments = 2
  config.eval.batch_size = 128  # the paper's RF-CoT inference batch (tab:inference_time)
  return config
