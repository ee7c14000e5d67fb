"""Text tokenizers for RF-CoT samples: built-in ones for from-scratch models, and any Hugging
Face `tokenizer.json` for pretrained ones.

`load(name_or_path)`:
- `char`: one token per character (newline and printable ASCII), so every digit is its own
  token; the from-scratch tokenizer.
- `digits`: words as single tokens (a leading space attached, as in GPT / Llama
  tokenizers), every digit its own token, punctuation one character a token, runs of spaces
  one token. Its vocabulary is the words and punctuation of every rule, prompt and trace
  phrase (read off one sample per RF-CoT task); anything else falls back to characters.
- a path to a `tokenizer.json`, or to a directory holding one (a Hugging Face checkpoint):
  through the `tokenizers` library, no network. BOS / EOS / PAD come from the directory's
  `tokenizer_config.json` when present, else from the usual special tokens in the vocabulary.
Every tokenizer has `encode(text) -> list[int]` (no special tokens), `decode(ids) -> str`
(special tokens dropped), `vocab_size`, `bos_id` (None: the model has none), `eos_id`,
`pad_id` and `tokens` (token strings by id).
"""
from __future__ import annotations

import functools
import pathlib
import re
from collections.abc import Sequence

import numpy as np

from nupa_jax.text.hf_tokenizer import HFTokenizer

_SPECIALS = ("<pad>", "<bos>", "<eos>")
_ALPHABET = "\n" + "".join(chr(c) for c in range(32, 127))
_WORDS = re.compile(r" ?[A-Za-z_]+| ?[^\sA-Za-z_0-9]|[0-9]|\n| +")
_MAX_SPACES = 16  # longest run of spaces with a token of its own (deeper indents: 2 tokens)


class _Vocabulary:
  """Special tokens, then fixed strings; encoding by a pre-tokenizer with character fallback."""

  bos_id, eos_id, pad_id = 1, 2, 0

  def __init__(self, strings: Sequence[str], splitter: re.Pattern | None):
    self.tokens = list(_SPECIALS) + list(strings)
    self._ids = {s: i for i, s in enumerate(self.tokens) if i >= len(_SPECIALS)}
    self._splitter = splitter

  @property
  def vocab_size(self) -> int:
    return len(self.tokens)

  def encode(self, text: str) -> list[int]:
    pieces = self._splitter.findall(text) if self._splitter else text
    ids = self._ids
    out = []
    for piece in pieces:
      i = ids.get(piece)
      if i is not None:
        out.append(i)
        continue
      try:
        out += [ids[c] for c in piece]
      except KeyError as e:
        raise ValueError(f"character {e.args[0]!r} is outside the {self.name} tokenizer's "
                         "alphabet (newline and printable ASCII)") from None
    return out

  def decode(self, ids: Sequence[int] | np.ndarray) -> str:
    tokens, first = self.tokens, len(_SPECIALS)
    return "".join(tokens[i] for i in np.asarray(ids).tolist() if first <= i < len(tokens))


class CharTokenizer(_Vocabulary):
  """One token per character."""
  name = "char"

  def __init__(self):
    super().__init__(_ALPHABET, None)


class WordTokenizer(_Vocabulary):
  """Whole words, single digits, single punctuation, space runs (see the module docstring)."""
  name = "digits"

  def __init__(self):
    words = sorted({p for text in _reference_texts() for p in _WORDS.findall(text)
                    if not p.isdigit() and len(p) > 1 and not p.isspace()})
    spaces = [" " * n for n in range(2, _MAX_SPACES + 1)]
    super().__init__(list(_ALPHABET) + spaces + words, _WORDS)


@functools.cache
def _reference_texts() -> tuple[str, ...]:
  """Prompt and response of one fixed question per RF-CoT task: every word a sample uses."""
  from nupa_jax import tasks  # pylint: disable=g-import-not-at-top
  from nupa_jax.rfcot import cot  # pylint: disable=g-import-not-at-top  (cot imports tasks)
  out = []
  for name in cot.names():
    a, b = tasks.get(name).sample(np.random.default_rng(0), 3)
    out += [cot.prompt(name, a, b), cot.response(name, a, b)]
  return tuple(out)


BUILTIN = {"char": CharTokenizer, "digits": WordTokenizer}


@functools.cache
def load(name_or_path: str) -> CharTokenizer | WordTokenizer | HFTokenizer:
  """A built-in tokenizer by name, or the tokenizer.json at a path (file or directory)."""
  if name_or_path in BUILTIN:
    return BUILTIN[name_or_path]()
  if pathlib.Path(name_or_path).exists():
    return HFTokenizer(name_or_path)
  raise ValueError(f"unknown tokenizer {name_or_path!r}; known: {', '.join(BUILTIN)}, or a path "
                   "to a tokenizer.json (or a directory holding one)")
