"""LoRA finetuning of a pretrained LLM on all NUPA tasks (paper §3.4): Llama-3.1-8B, LoRA rank
128, α 32, on the mixed NUPA training set, ~800 steps, beats GPT-4o on several tasks.

`--config=configs/finetune.py:model=DIR` with DIR a local Hugging Face checkpoint (Llama 2 / 3
/ 3.1, Qwen2). The model is the checkpoint's (config.json -> config.model, weights loaded at the
start); LoRA adapters (dropout 0.1) on q/k/v/o/gate/up/down are the only trained weights.
Data: every task, lengths 1 to its tier (20 or 100; `digits=N` caps them), written as the
paper's text prompts in the checkpoint's tokens (`nupa_jax.llm.encoding`): loss on the answer
after `=` and on the EOS taught after it; a pool of 10^5 samples per task and length (the
paper's training set size), test questions excluded. Evaluation generates on the frozen test
set with the same prompts (`eval.per_length`, 0 here: the validation loss picks the best
checkpoint). At the end the adapters are merged and the model exported to WORKDIR/export as a
Hugging Face checkpoint, which `python -m nupa_jax.evaluate_llm --model` scores.

The paper trains "about 50M samples" in 800 steps; its batch size is unpublished. The default
here (256 samples, `batch=`) suits one 8-GPU node; parameters are sharded over all devices
(fsdp) and activations rematerialised, as an 8B model needs.
"""
import ml_collections

from configs import common
from nupa_jax import tasks
from nupa_jax.data import settings as data_settings
from nupa_jax.models import hf
from nupa_jax.models import lora

POOL_PER_CELL = 10**5  # paper: 1e5 training samples per task and digit length


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  arg = common.parse_arg(arg, model="", rank=128, alpha=32.0, dropout=0.1, steps=800,
                         batch=256, lr=1e-4, digits=0, dtype="bfloat16", chat="no", seed=0)
  if not arg.model:
    raise ValueError("configs/finetune.py needs model=DIR, a Hugging Face checkpoint directory "
                     "(config.json, safetensors, tokenizer.json)")
  config = common.base(size="100m", seed=arg.seed)
  # The model is the checkpoint's (nupa_jax.llm.finetune builds it from config.pretrained);
  # config.model spells it out for the run's config.json and sets the runtime fields.
  config.pretrained = arg.model
  config.model = ml_collections.ConfigDict({
      **common.model("100m").to_dict(), **hf.model_config(hf.read_config(arg.model), arg.dtype),
      "remat": "full"})
  config.lora = ml_collections.ConfigDict({"rank": arg.rank, "alpha": arg.alpha,
                                           "dropout": arg.dropout, "targets": lora.TARGETS})
  config.text = ml_collections.ConfigDict({
      "tokenizer": {"name": "hf", "path": arg.model, "chat": arg.chat}, "format": {}})

  cap = lambda tier: min(tier, arg.digits) if arg.digits > 0 else tier
  config.data.tasks = {"all": 1.0}
  config.data.train_digits = (1, cap(20))
  config.data.task_digits = {name: (1, cap(tasks.get(name).max_digits))
                             for name in tasks.names() if tasks.get(name).max_digits != 20}
  cells = len(data_settings.Settings.from_config(config).mixture)
  config.data.pool_size = POOL_PER_CELL * cells

  config.train.steps = arg.steps
  config.train.batch_size = arg.batch
  config.train.learning_rate = arg.lr
  config.train.warmup_steps = min(50, arg.steps // 10)
  # Validation loss every quarter (the best checkpoint is kept by it); the test set is scored
  # on the export: python -m nupa_jax.evaluate_llm --model WORKDIR/export --test BENCH_DIR.
  config.eval.every = max(arg.steps // 4, 1)
  config.eval.per_length = 0
  config.eval.digits = (1, 100)
  config.eval.batch_size = 64
  config.checkpoint.every = max(arg.steps // 4, 1)
  config.mesh.shape = {"data": 1, "fsdp": -1, "tensor": 1}
  return config
