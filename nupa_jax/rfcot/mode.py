"""RF-CoT traces as the `rfcot` text mode (`nupa_jax.runmode`): data.py's encoder and data
fields for a config whose `config.text.tokenizer.name` is "rfcot", from scratch or on a
pretrained checkpoint (whichever model source claims the config)."""
from __future__ import annotations

from nupa_jax import runmode
from nupa_jax.rfcot import data


class RFCoTText(runmode.TextMode):
  name = data.MODE

  def claims(self, config) -> bool:
    return data.tokenizer_config(config).get("name") == self.name

  def encoder(self, config):
    return data.encoder_from_config(config)

  def configure(self, config, encoder):
    """Padded rows of the context, each task's lengths cut to those that fit."""
    return data.configure(config, encoder)


runmode.register_text_mode(RFCoTText())
