"""The digit-text run mode: samples written by `text.Encoder(**config.text)` (the default)."""
from __future__ import annotations

from nupa_jax import runmode
from nupa_jax import settings
from nupa_jax.text import tokenizer as tokenizer_lib
from nupa_jax.text.encoder import Encoder


class DigitText(runmode.TextMode):
  """`config.text.tokenizer` names a digit tokenizer (`text.tokenizer`), or is absent."""
  name = "digits"

  def claims(self, config) -> bool:
    name = ((config.get("text") or {}).get("tokenizer") or {}).get("name")
    return name is None or name in tokenizer_lib.names()

  def encoder(self, config) -> Encoder:
    text = config.get("text") or {}
    return Encoder(tokenizer=settings.plain(text.get("tokenizer")),
                   format=settings.plain(text.get("format")))


runmode.register_text_mode(DigitText())
