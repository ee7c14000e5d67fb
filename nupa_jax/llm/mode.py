"""Pretrained checkpoints as run modes (`nupa_jax.runmode`): their prompts and their weights.

- text mode `hf`: `config.text.tokenizer = {"name": "hf", "path": DIR, ...}`, the paper's
  prompts in the checkpoint's own tokens (`encoding.PromptEncoder`);
- model source `pretrained`: `config.pretrained = DIR`, the checkpoint's model with LoRA
  adapters or all of it trained, exported as a Hugging Face checkpoint when training ends
  (`finetune`). RF-CoT text on a pretrained model combines it with the `rfcot` text mode.
"""
from __future__ import annotations

from flax import nnx

from nupa_jax import runmode
from nupa_jax import settings
from nupa_jax.llm import encoding
from nupa_jax.llm import finetune


class PromptText(runmode.TextMode):
  name = encoding.MODE

  def claims(self, config) -> bool:
    text = config.get("text") or {}
    return (settings.plain(text.get("tokenizer")) or {}).get("name") == self.name

  def encoder(self, config) -> encoding.PromptEncoder:
    return encoding.encoder_from_config(config)


class Pretrained(runmode.ModelSource):
  name = "pretrained"
  position_limits = False  # the checkpoint's rotary positions have no limits

  def claims(self, config) -> bool:
    return bool(config.get("pretrained"))

  def state_spec(self, config, vocab_size, mesh, *, seed, tx=None):
    del vocab_size  # the checkpoint's
    if config.get("init_from"):
      raise ValueError("config.init_from does not apply to a finetuning run, which starts "
                       "from config.pretrained: set one of them")
    return finetune.spec(config, mesh, seed=seed, tx=tx)

  def initial_state(self, spec, config, vocab_size, mesh, *, seed, tx=None):
    del vocab_size, mesh
    return finetune.initialise(spec, config, seed=seed, tx=tx)

  def trainable(self, config):
    return finetune.trainable(config)

  def finish(self, graphdef, state, config, workdir):
    # On every process: the export gathers the sharded weights.
    out = finetune.export(nnx.merge(graphdef, state)[0], config, workdir / finetune.EXPORT_DIR)
    return f"exported the finetuned model (adapters merged) to {out}"


runmode.register_text_mode(PromptText())
runmode.register_model_source(Pretrained())
