"""RF-CoT samples as token ids, with the interface of `nupa_jax.text.Encoder`.

The data pipeline and the evaluator call an encoder's `encode(task, a, b, answer, rng)`,
`positions(task, tokens)`, `decode_answer(task, generated)`, `pad_id`, `eos_id` and
`vocab_size`; this one writes the RF-CoT text (cot.py) instead of the digit-token sample:

    [BOS] prompt-tokens response-tokens [EOS]     loss mask: False ... False, True ... True

(no BOS when the tokenizer has none), the response being the rule's trace and "So the answer
is X". `decode_answer` reads the answer after "So the answer is" from generated tokens.

The context budget: a sample takes `len(tokens) - 1` positions of a row — BOS, prompt and
response; EOS is only ever a target (the pipeline's packing) — and fits when that is at most
`context`. The budget tool and the data mode use this one definition.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nupa_jax.rfcot import cot
from nupa_jax.rfcot import tokenization


class Encoder:
  """RF-CoT prompt + response tokens of NUPA questions, for training and evaluation.

  Args:
    tokenizer: `char`, `digits` or the path of a tokenizer.json (tokenization.load).
    context: the most positions a sample may take (see the module docstring).
  """

  def __init__(self, tokenizer: str = "char", context: int = 2048):
    if context < 2:
      raise ValueError(f"an RF-CoT context of {context} positions cannot hold a sample")
    self.tokenizer_name = tokenizer
    self.tokenizer = tokenization.load(tokenizer)
    self.context = int(context)
    self.pad_id, self.bos_id, self.eos_id = (self.tokenizer.pad_id, self.tokenizer.bos_id,
                                             self.tokenizer.eos_id)

  @property
  def vocab_size(self) -> int:
    return self.tokenizer.vocab_size

  @property
  def tokens(self) -> list[str]:
    """Token strings by id."""
    return list(self.tokenizer.tokens)

  def encode_text(self, prompt: str, response: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Token ids (int32[T]) and loss mask (bool[T]) of a prompt and optional response."""
    ids = ([] if self.bos_id is None else [self.bos_id]) + self.tokenizer.encode(prompt)
    prompt_length = len(ids)
    if response is not None:
      ids += self.tokenizer.encode(response) + [self.eos_id]
    mask = np.zeros(len(ids), np.bool_)
    mask[prompt_length:] = True
    return np.array(ids, np.int32), mask

  def encode(self, task: str, a: str, b: str | None, answer: str | None,
             rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The sample (`answer=None`: the prompt only, for generation). `rng` is unused: RF-CoT
    text is a function of the question. ValueError if the rule's answer is not `answer`."""
    del rng
    prompt = cot.prompt(task, a, b)
    if answer is None:
      return self.encode_text(prompt, None)
    solved, response = cot.solve(task, a, b)
    if solved != answer:
      raise ValueError(f"the RF-CoT rule {cot.rule_name(task)} gives {solved!r} for {task} "
                       f"({a!r}, {b!r}), the task's answer is {answer!r}")
    return self.encode_text(prompt, response)

  def positions(self, task: str, tokens: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
    """Zeros: digit indices and significances describe digit-token samples, not RF-CoT text
    (RF-CoT runs use RoPE or another encoding that reads neither)."""
    del task
    zeros = np.zeros(len(tokens), np.int32)
    return {"digit_index": zeros, "significance": zeros.copy()}

  def used_positions(self, tokens: Sequence[int] | np.ndarray) -> int:
    """Positions a whole sample (ending in EOS) takes in a row."""
    return len(tokens) - 1

  def fits(self, tokens: Sequence[int] | np.ndarray) -> bool:
    return self.used_positions(tokens) <= self.context

  def render(self, tokens: Sequence[int] | np.ndarray) -> str:
    """The text of token ids (special tokens dropped)."""
    return self.tokenizer.decode(tokens)

  def decode_answer(self, task: str, generated: Sequence[int] | np.ndarray) -> str:
    """The answer after "So the answer is" in the tokens generated after the prompt, read up
    to the first EOS or PAD; '' when there is none."""
    del task
    ids = np.asarray(generated).tolist()
    for stop in (self.eos_id, self.pad_id):
      if stop in ids:
        ids = ids[:ids.index(stop)]
    return cot.extract_answer(self.render(ids))
