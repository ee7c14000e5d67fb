"""Rule-following chain of thought (paper §4, appendix "Rule-following Chain-of-thought"):
train on RF-CoT samples — the rule's code in the prompt, its step-by-step execution as the
response, loss on the response only — and score the answer after "So the answer is".

    --config=configs/rfcot.py                             from scratch: 100M, char tokens
    --config=configs/rfcot.py:size=tiny,tasks=add_int     a CPU-sized variant
    --config=configs/rfcot.py:model=/ckpt/Llama-3.1-8B    finetune a pretrained checkpoint with
                                                          its own tokenizer.json

Arguments: `model` (`scratch`, or a Hugging Face checkpoint directory), `tokenizer` (`char`,
`digits` or a tokenizer.json path; from-scratch runs only), `tasks` (`table`: the 22 tasks of
the paper's tab:rfft_max_length, or names joined by `+`: `add_int+max_sci`), `size` (model preset and training
settings of configs/common.py), `context` (positions a sample may take; the paper dropped
samples over 2000 tokens), `per_length` (test questions per task and length; every one
generates a whole trace), `seed`.

The RF-CoT data mode (nupa_jax/rfcot/data.py) turns `config.text.tokenizer = {"name":
"rfcot", ...}` into one sample a row of `context` positions, cuts each task's lengths
(`config.data.task_digits`, here every length of the task) to those that fit, and drops and
counts the samples that still do not.
"""
from configs import common
from nupa_jax import tasks
from nupa_jax.rfcot import cot


def get_config(arg: str | None = None):
  arg = common.parse_arg(arg, model="scratch", tokenizer="char", tasks="table", size="100m",
                         context=2048, per_length=20, seed=0)
  config = common.base(size=arg.size, seed=arg.seed)
  pretrained = arg.model != "scratch"
  # A pretrained model reads its own tokenizer; the pretrained loader builds the model from the
  # same directory (`config.pretrained`) instead of config.model.
  config.pretrained = arg.model if pretrained else ""
  config.text.tokenizer = {"name": "rfcot", "context": arg.context,
                           "text_tokenizer": arg.model if pretrained else arg.tokenizer}
  names = cot.TABLE_TASKS if arg.tasks == "table" else tuple(
      tasks.get(n.strip()).name for n in arg.tasks.split("+") if n.strip())
  for name in names:
    cot.rule_name(name)  # ValueError for a task without an RF-CoT rule
  config.data.tasks = {name: 1.0 for name in names}
  config.data.task_digits = {name: (1, tasks.get(name).max_digits) for name in names}
  config.data.packing = "padded"
  config.data.seq_len = arg.context
  config.model.max_len = arg.context
  config.eval.digits = (1, 100)  # each task's test lengths; samples over the context are left out
  config.eval.per_length = arg.per_length
  config.eval.batch_size = 128  # the paper's RF-CoT inference batch (tab:inference_time)
  return config
