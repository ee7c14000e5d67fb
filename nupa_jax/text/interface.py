"""`SampleEncoder`: what the data pipeline and the evaluator need of any run's encoder.

Digit text (`text.Encoder`), RF-CoT traces (`rfcot.Encoder`) and a pretrained checkpoint's
prompts (`llm.encoding.PromptEncoder`) all provide it; a run's `runmode.TextMode` builds one.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class SampleEncoder(Protocol):
  """Token ids of NUPA samples, their per-token features, and answers read back."""
  pad_id: int
  eos_id: int

  @property
  def vocab_size(self) -> int:
    """Token ids are below this."""

  def encode(self, task: str, a: str, b: str | None, answer: str | None,
             rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """int32[T] token ids and bool[T] loss mask of a sample (`answer=None`: the prompt)."""

  def positions(self, task: str, tokens: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
    """Per-token features (`digit_index`, `significance`) of `tokens`."""

  def decode_answer(self, task: str, generated: Sequence[int] | np.ndarray) -> str:
    """The canonical answer text in tokens generated after a prompt ('' if none)."""

  def fits(self, tokens: Sequence[int] | np.ndarray) -> bool:
    """Whether a whole sample fits the encoder's context budget (one without: always)."""
