"""A Hugging Face `tokenizer.json` through the `tokenizers` library (no network).

BOS / EOS / PAD come from the directory's `tokenizer_config.json` when present, else from the
usual special tokens in the vocabulary. RF-CoT runs read text with it (`rfcot.tokenization`);
a pretrained checkpoint's prompts add its chat template (`llm.tokenizer`).
"""
from __future__ import annotations

import json
import pathlib
from collections.abc import Sequence

import numpy as np

# Special tokens of common checkpoints, for tokenizer.json files without a tokenizer_config.json.
_BOS_NAMES = ("<|begin_of_text|>", "<s>", "<bos>", "[BOS]", "<|startoftext|>")
_EOS_NAMES = ("<|end_of_text|>", "</s>", "<eos>", "[EOS]", "<|endoftext|>", "<|im_end|>",
              "<|eot_id|>")
_PAD_NAMES = ("<pad>", "[PAD]", "<|pad|>", "<|finetune_right_pad_id|>")


class HFTokenizer:
  """A Hugging Face `tokenizer.json` through the `tokenizers` library."""

  def __init__(self, path: str | pathlib.Path):
    try:
      import tokenizers  # pylint: disable=g-import-not-at-top
    except ImportError:
      raise ImportError("reading a tokenizer.json needs the `tokenizers` library: "
                        "pip install tokenizers") from None
    path = pathlib.Path(path)
    file = path / "tokenizer.json" if path.is_dir() else path
    if not file.is_file():
      raise FileNotFoundError(f"no tokenizer.json at {file}")
    self.name = str(path)
    self._tokenizer = tokenizers.Tokenizer.from_file(str(file))
    config_file = file.parent / "tokenizer_config.json"
    config = json.loads(config_file.read_text()) if config_file.is_file() else {}
    self.bos_id = self._special(config.get("bos_token"), _BOS_NAMES)
    self.eos_id = self._special(config.get("eos_token"), _EOS_NAMES)
    if self.eos_id is None:
      raise ValueError(f"{file} names no end-of-sequence token (tried {', '.join(_EOS_NAMES)});"
                       " add a tokenizer_config.json with \"eos_token\" next to it")
    pad = self._special(config.get("pad_token"), _PAD_NAMES)
    self.pad_id = self.eos_id if pad is None else pad  # padding is never a target

  def _special(self, configured, candidates: Sequence[str]) -> int | None:
    if isinstance(configured, dict):
      configured = configured.get("content")
    for name in ([configured] if configured else []) + list(candidates):
      i = self._tokenizer.token_to_id(name)
      if i is not None:
        return i
    return None

  @property
  def vocab_size(self) -> int:
    return self._tokenizer.get_vocab_size(with_added_tokens=True)

  @property
  def tokens(self) -> list[str]:
    return [self._tokenizer.id_to_token(i) or "" for i in range(self.vocab_size)]

  def encode(self, text: str) -> list[int]:
    return self._tokenizer.encode(text, add_special_tokens=False).ids

  def decode(self, ids: Sequence[int] | np.ndarray) -> str:
    return self._tokenizer.decode(np.asarray(ids).tolist(), skip_special_tokens=True)
