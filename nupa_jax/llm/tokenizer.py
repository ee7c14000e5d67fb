"""A pretrained checkpoint's tokenizer: tokenizer.json, its special tokens, its chat template.

Builds on the Hugging Face tokenizer of `text.hf_tokenizer` (the `tokenizers` library, no
network; BOS / EOS / PAD from tokenizer_config.json) and adds what
prompting a chat or base model needs:
- `encode_prompt(text)`: the ids the checkpoint's own pipeline gives, special tokens included
  (tokenizer.json's post-processor adds Llama's `<|begin_of_text|>`; Qwen2 adds none);
- `render_chat(messages)`: the chat template (tokenizer_config.json's `chat_template`, or a
  `chat_template.jinja` file) rendered with jinja2 the way transformers does — sandboxed,
  `trim_blocks` / `lstrip_blocks`, `raise_exception`, `strftime_now`, `tojson`;
- `stop_ids`: EOS plus generation_config.json's `eos_token_id`s (chat models end turns with
  their own token, e.g. Llama-3.1-Instruct's `<|eot_id|>`).
"""
from __future__ import annotations

import datetime
import functools
import json
import pathlib
from collections.abc import Mapping, Sequence

from nupa_jax.text import hf_tokenizer

TOKENIZER_CONFIG = "tokenizer_config.json"
CHAT_TEMPLATE_FILE = "chat_template.jinja"
GENERATION_CONFIG = "generation_config.json"
_SPECIAL_KEYS = ("bos_token", "eos_token", "pad_token", "unk_token")


def _read_json(file: pathlib.Path) -> dict:
  return json.loads(file.read_text()) if file.is_file() else {}


def _chat_template(directory: pathlib.Path, config: Mapping) -> str | None:
  """The default chat template of a checkpoint, or None if it has none."""
  template = config.get("chat_template")
  if isinstance(template, list):  # named templates: [{"name": ..., "template": ...}]
    template = {t["name"]: t["template"] for t in template}.get("default")
  if not template and (directory / CHAT_TEMPLATE_FILE).is_file():
    template = (directory / CHAT_TEMPLATE_FILE).read_text()
  return template or None


class Tokenizer(hf_tokenizer.HFTokenizer):
  """The tokenizer of a Hugging Face checkpoint directory (see the module docstring)."""

  def __init__(self, path: str | pathlib.Path):
    super().__init__(path)
    path = pathlib.Path(path)
    directory = path if path.is_dir() else path.parent
    config = _read_json(directory / TOKENIZER_CONFIG)
    self.special_tokens = {}
    for key in _SPECIAL_KEYS:
      value = config.get(key)
      value = value.get("content") if isinstance(value, dict) else value
      if value:
        self.special_tokens[key] = value
    self.chat_template = _chat_template(directory, config)
    eos = _read_json(directory / GENERATION_CONFIG).get("eos_token_id")
    extra = eos if isinstance(eos, list) else [] if eos is None else [eos]
    self.stop_ids = tuple(dict.fromkeys([self.eos_id, *map(int, extra)]))

  def encode_prompt(self, text: str) -> list[int]:
    """Ids of `text` with the special tokens the checkpoint's post-processor adds (BOS)."""
    return self._tokenizer.encode(text, add_special_tokens=True).ids

  def render_chat(self, messages: Sequence[Mapping[str, str]],
                  add_generation_prompt: bool = True) -> str:
    """The chat template applied to `[{"role", "content"}, ...]` (text, BOS included)."""
    if self.chat_template is None:
      raise ValueError(f"{self.name} has no chat template (no chat_template in "
                       f"{TOKENIZER_CONFIG}, no {CHAT_TEMPLATE_FILE}); prompt it as plain text")
    return _compile(self.chat_template).render(
        messages=list(messages), add_generation_prompt=add_generation_prompt,
        **self.special_tokens)

  def cut_at_stop(self, ids: Sequence[int]) -> list[int]:
    """`ids` up to (without) the first stop token or padding."""
    ids = list(ids)
    for i, token in enumerate(ids):
      if token in self.stop_ids or token == self.pad_id:
        return ids[:i]
    return ids


def _raise(message: str):
  raise ValueError(f"chat template: {message}")


@functools.cache
def _compile(template: str):
  """A jinja2 template, in the environment transformers renders chat templates in."""
  try:
    import jinja2  # pylint: disable=g-import-not-at-top
    from jinja2 import ext, sandbox  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError("chat templates need jinja2: pip install jinja2 (or prompt the model "
                      "as plain text)") from None
  env = sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                              extensions=[ext.loopcontrols])
  env.filters["tojson"] = lambda value, indent=None, ensure_ascii=False, **_: json.dumps(
      value, indent=indent, ensure_ascii=ensure_ascii)
  env.globals["raise_exception"] = _raise
  env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
  try:
    return env.from_string(template)
  except jinja2.TemplateSyntaxError as e:
    raise ValueError(f"the checkpoint's chat template does not parse: {e}") from None
