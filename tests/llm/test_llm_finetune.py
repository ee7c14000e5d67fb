"""LoRA finetuning of a tiny checkpoint through configs/finetune.py: the data pipeline in text
mode, adapters that start as a no-op, a few steps that lower the loss with the base frozen, and
merged weights that transformers reloads with the finetuned behaviour."""
import functools

import jax
import numpy as np
import optax
import pytest
from flax import nnx

from configs import finetune as finetune_config
from configs import rfcot as rfcot_config
from nupa_jax import data
from nupa_jax import runmode
from nupa_jax import sharding
from nupa_jax.llm import encoding
from nupa_jax.llm import finetune
from nupa_jax.models import hf
from nupa_jax.training import step as step_lib
import llm_testing

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

STEPS, LR = 6, 0.05


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
  directory = tmp_path_factory.mktemp("qwen2")
  vocab = llm_testing.write_tokenizer(directory)
  eos = transformers.PreTrainedTokenizerFast.from_pretrained(directory).eos_token_id
  model = llm_testing.hf_model("qwen2", vocab + 16, eos=eos, pad=eos, seed=5)
  model.save_pretrained(directory)
  return directory, model


def small_config(directory):
  config = finetune_config.get_config(f"model={directory},rank=4,alpha=8,dropout=0.0,"
                                      f"steps={STEPS},batch=8,lr={LR},dtype=float32")
  config.data.tasks = {"add_int": 1.0}
  config.data.task_digits = {}
  config.data.train_digits = (1, 4)
  config.data.samples_per_row = 4
  config.data.seq_len = 192  # skips the pipeline's probe of the stream
  config.data.exclude_test = False  # keeps the test fast; exclusion is the pipeline's own
  config.model.remat = "none"  # compiles faster; remat is the trainer's concern
  return config


def test_config_follows_the_paper(checkpoint):
  directory, _ = checkpoint
  config = finetune_config.get_config(f"model={directory}")
  assert (config.lora.rank, config.lora.alpha, config.lora.dropout) == (128, 32.0, 0.1)
  assert tuple(config.lora.targets) == ("q", "k", "v", "o", "gate", "up", "down")
  assert config.train.steps == 800 and config.data.tasks.to_dict() == {"all": 1.0}
  assert config.pretrained == str(directory)
  assert runmode.resolve(config).model.name == "pretrained"
  assert config.model.qkv_bias and config.model.tie_embeddings is False
  # 1e5 samples per task and length: 20-digit tasks train on 1-20, 100-digit ones on 1-100.
  from nupa_jax import tasks
  cells = sum(tasks.get(n).max_digits for n in tasks.names())
  assert config.data.pool_size == 10**5 * cells
  with pytest.raises(ValueError, match="needs model=DIR"):
    finetune_config.get_config("rank=8")


def test_rfcot_runs_finetune_the_whole_checkpoint_whatever_config_model_says(checkpoint):
  directory, reference = checkpoint
  config = rfcot_config.get_config(f"model={directory},size=tiny,tasks=add_int")
  assert finetune.trainable(config) is nnx.Param  # no LoRA
  state_spec = finetune.spec(config, sharding.make_mesh({"data": -1}))
  model = nnx.merge(state_spec.graphdef, state_spec.abstract)
  assert model.embed.table.shape == tuple(reference.model.embed_tokens.weight.shape)
  assert model.config.qkv_bias and model.config.num_layers == llm_testing.LAYERS
  assert model.config.dtype == config.model.dtype  # a runtime field of config.model


def test_lora_finetuning_trains_adapters_only_and_exports_the_merged_model(checkpoint, tmp_path):
  directory, reference = checkpoint
  config = small_config(directory)
  encoder = encoding.encoder_from_config(config)
  pipeline = data.Pipeline(config, encoder)
  mesh = sharding.make_mesh(config.mesh.shape)
  tx = optax.adam(LR)
  spec = finetune.spec(config, mesh, tx=tx)
  state = finetune.initialise(spec, config, tx=tx)
  model, _ = nnx.merge(spec.graphdef, state)
  tokens = np.random.default_rng(0).integers(0, encoder.vocab_size, (2, 40))
  before = llm_testing.hf_logits(reference, tokens)
  np.testing.assert_allclose(llm_testing.logits(model, tokens), before, rtol=1e-4,
                             atol=1e-4 * np.abs(before).max())  # B = 0: the checkpoint's logits

  wrt = finetune.trainable(config)

  @functools.partial(jax.jit, compiler_options=llm_testing.QUICK)
  def train_step(state, batch):
    model, optimizer = nnx.merge(spec.graphdef, state)

    def loss_fn(model):
      total, count = step_lib.loss_sums(model, batch)
      return total / count

    loss, grads = nnx.value_and_grad(loss_fn, argnums=nnx.DiffState(0, wrt))(model)
    optimizer.update(model, grads)
    return nnx.state((model, optimizer)), loss

  validation = step_lib.device_batch(next(iter(pipeline.val_iterator(1, mesh))))
  assert validation["loss_mask"].any()
  loss_of = jax.jit(lambda state, batch: (lambda s: s[0] / s[1])(step_lib.loss_sums(
      nnx.merge(spec.graphdef, state)[0], batch)), compiler_options=llm_testing.QUICK)
  start = float(loss_of(state, validation))
  base = jax.tree.map(np.asarray, nnx.state(model, nnx.Param))
  with pipeline.train_iterator(mesh) as batches:
    for _ in range(STEPS):
      state, _ = train_step(state, step_lib.device_batch(next(batches)))
  assert float(loss_of(state, validation)) < 0.95 * start, start
  model, _ = nnx.merge(spec.graphdef, state)
  for a, b in zip(jax.tree.leaves(base), jax.tree.leaves(nnx.state(model, nnx.Param))):
    np.testing.assert_array_equal(a, b)  # the base is frozen

  finetuned = llm_testing.logits(model, tokens)
  assert not np.allclose(finetuned, before, atol=1e-3)
  with pytest.raises(ValueError, match="LoRA adapters: fold them in with lora.merge"):
    hf.save_pretrained(model, tmp_path / "unmerged")
  out = finetune.export(model, config, tmp_path / "export")
  assert (out / "tokenizer.json").is_file() and (out / "tokenizer_config.json").is_file()
  exported = transformers.AutoModelForCausalLM.from_pretrained(out).eval()
  np.testing.assert_allclose(llm_testing.hf_logits(exported, tokens), finetuned, rtol=1e-4,
                             atol=1e-4 * np.abs(finetuned).max())
  assert exported.config.eos_token_id == reference.config.eos_token_id  # source keys kept
