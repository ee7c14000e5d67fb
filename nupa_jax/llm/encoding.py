"""NUPA questions as a pretrained LLM's text, with the interface of `nupa_jax.text.Encoder`.

The data pipeline and the evaluator call an encoder's `encode(task, a, b, answer, rng)`,
`positions`, `decode_answer`, `pad_id`, `eos_id` and `vocab_size`; this one writes the paper's
text prompts (prompts.py) in the checkpoint's own tokens:

    plain:  [BOS] <shots> prompt(a, b) = | ␣answer [EOS]
    chat:   chat template(shot turns, user: prompt(a, b) =, generation prompt) | answer [EOS]

with the loss mask on the answer and EOS only (the paper: "the context before the `=` is not
involved in the loss"). The answer's ids are those of the whole text after the prompt's, so
they are what the tokenizer gives the sample as one text (an answer's first digits are not cut
differently from how a model reads them), while the prompt keeps exactly the ids generation
starts from; where the tokenizer merges across that boundary, the answer is tokenized alone.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

import ml_collections
import numpy as np

from nupa_jax import metrics
from nupa_jax import settings
from nupa_jax import tasks
from nupa_jax.llm import prompts
from nupa_jax.llm.tokenizer import Tokenizer
from nupa_jax.models import hf

MODE = "hf"  # config.text.tokenizer["name"] of a pretrained-LLM run
CHAT_MODES = ("auto", "yes", "no")


class PromptEncoder:
  """Encodes NUPA samples as text prompts of a pretrained checkpoint.

  Args:
    path: the checkpoint directory (tokenizer.json; config.json for the model's vocabulary).
    chat: "yes" / "no" / "auto" (the chat template where the checkpoint has one).
    shots: solved examples before each question (0 or the paper's 5).
    shot_seed: seeds the examples (prompts.examples).
    exclude: (task, a, b) of questions no example may be (the evaluated test questions).
  """

  def __init__(self, path: str, *, chat: str = "no", shots: int = 0, shot_seed: int = 0,
               exclude: Collection[tuple[str, str, str | None]] = ()):
    if chat not in CHAT_MODES:
      raise ValueError(f"unknown chat mode {chat!r}; known: {', '.join(CHAT_MODES)}")
    self.tokenizer = Tokenizer(path)
    self.chat = self.tokenizer.chat_template is not None if chat == "auto" else chat == "yes"
    if self.chat and self.tokenizer.chat_template is None:
      raise ValueError(f"chat='yes' but {path} has no chat template; use chat='no' or 'auto'")
    self.shots, self.shot_seed = int(shots), int(shot_seed)
    self._exclude: dict[str, set] = {}
    for task, a, b in exclude:
      self._exclude.setdefault(tasks.get(task).name, set()).add((a, b))
    self._examples: dict[str, tuple[prompts.Shot, ...]] = {}
    model_vocab = hf.read_config(path).get("vocab_size", 0)
    self.vocab_size = max(int(model_vocab), self.tokenizer.vocab_size)
    self.pad_id, self.bos_id, self.eos_id = (self.tokenizer.pad_id, self.tokenizer.bos_id,
                                             self.tokenizer.eos_id)

  @property
  def tokens(self) -> list[str]:
    return self.tokenizer.tokens

  def examples(self, task: str) -> tuple[prompts.Shot, ...]:
    """The task's few-shot examples (fixed per encoder)."""
    name = tasks.get(task).name
    if name not in self._examples:
      self._examples[name] = prompts.examples(name, self.shots, self.shot_seed,
                                              self._exclude.get(name, ()))
    return self._examples[name]

  def prompt_text(self, task: str, a: str, b: str | None) -> str:
    """The full text the model is given (template and examples included)."""
    question, shots = tasks.get(task).prompt(a, b), self.examples(task)
    if self.chat:
      return self.tokenizer.render_chat(prompts.messages(question, shots))
    return prompts.text(question, shots)

  def _ids(self, text: str) -> list[int]:
    # A rendered chat template already holds its special tokens.
    return (self.tokenizer.encode(text) if self.chat else self.tokenizer.encode_prompt(text))

  def encode(self, task: str, a: str, b: str | None, answer: str | None,
             rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """int32[T] ids and bool[T] loss mask of a sample (`answer=None`: the prompt only)."""
    del rng  # the text of a question is fixed
    prefix = self.prompt_text(task, a, b)
    ids = self._ids(prefix)
    n = len(ids)
    if answer is not None:
      continuation = answer if self.chat else " " + answer
      full = self._ids(prefix + continuation)
      ids = (full if full[:n] == ids else ids + self.tokenizer.encode(continuation))
      ids = ids + [self.eos_id]
    mask = np.zeros(len(ids), np.bool_)
    mask[n:] = True
    return np.asarray(ids, np.int32), mask

  def positions(self, task: str, tokens: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
    """Zeros: pretrained LLMs use RoPE, which reads neither digit indices nor significances."""
    del task
    zeros = np.zeros(len(tokens), np.int32)
    return {"digit_index": zeros, "significance": zeros.copy()}

  def fits(self, tokens: Sequence[int] | np.ndarray) -> bool:
    """True: prompts are not cut to a context budget (`text.SampleEncoder`)."""
    del tokens
    return True

  def render(self, tokens: Sequence[int] | np.ndarray) -> str:
    """The text of ids (special tokens dropped)."""
    return self.tokenizer.decode(tokens)

  def reply(self, generated: Sequence[int] | np.ndarray) -> str:
    """The text generated after a prompt, up to the first stop token."""
    return self.render(self.tokenizer.cut_at_stop(np.asarray(generated).tolist()))

  def decode_answer(self, task: str, generated: Sequence[int] | np.ndarray) -> str:
    """The answer in a generated reply, extracted as the paper does ("" if none)."""
    return metrics.extract_answer(self.reply(generated), tasks.get(task).answer_repr)


def encoder_from_config(config: ml_collections.ConfigDict) -> PromptEncoder:
  """The encoder of `config.text.tokenizer = {"name": "hf", "path": DIR, "chat": ..., "shots":
  ...}` (what `configs/finetune.py` sets)."""
  options = dict(settings.plain(config.text.tokenizer))
  if options.pop("name", None) != MODE:
    raise ValueError(f"config.text.tokenizer is not a pretrained checkpoint's (name {MODE!r})")
  unknown = sorted(set(options) - {"path", "chat", "shots"})
  if unknown:
    raise ValueError(f"unknown options {unknown} of config.text.tokenizer; known: path, chat, "
                     "shots")
  if not options.get("path"):
    raise ValueError("config.text.tokenizer.path must name the checkpoint directory")
  return PromptEncoder(options["path"], chat=options.get("chat", "no"),
                       shots=int(options.get("shots", 0)))
