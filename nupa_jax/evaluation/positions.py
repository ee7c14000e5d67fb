"""The position ids an evaluation gives each question's tokens: a registry of rules.

"consecutive" (the default) gives 0, 1, 2, ...: the paper's evaluation, and the official
code's, which turns randomized positions off when it evaluates. "training" is a diagnostic for
a PE trained on randomized positions (`random_positions=M`): each question's ids are drawn as
training draws a sample's, a uniformly random sorted n-subset of [0, M) where n is the length
of the question's whole sample (prompt and true answer: `data.packing` feeds a sample's tokens
but the last, EOS, which is only a target). As in training, the ids' spread thus follows the
sample's length, the true answer's included: the rule measures whether the model does the task
on the ids it was trained on, not a score a model could get from its prompt alone. Scoring one
checkpoint both ways tells a model that has not learned the task from one that has learned it
only on spread-out ids. Tokens a model generates past the true answer's end continue from the
last drawn id by ones, clipped at M - 1.

"training_longest" draws the same way for a sample of the question's own prompt and the longest
true answer among the evaluated questions of its task and length. The ids' spread then follows
only what the model reads anyway, its prompt, and no longer says how long its own answer is: a
gain over consecutive ids that "training" shows could come from that length alone, one that
"training_longest" shows cannot. Two costs: a sample's draw is denser than training's for it by
the gap to that longest answer (integer addition: d or d + 1 answer digits, drawn for d + 1, at
most one token; tasks whose answers vary widely in length, tens), and the longest answer is the
evaluated questions' (with few questions a length it nears each question's own, and with one it
is: the rule then gives "training"'s ids).

A rule is a draw, mapping (each row's sample length, ids per row, the PE's M, each row's seed)
to int32[rows, ids per row], and which sample lengths of a batch it draws for; "consecutive"
has no draw (None: generate's own 0, 1, 2, ...). Draws are made on the host with numpy,
independently of the training sampler (`models.posenc.sampling`), from a seed per question, so
that a question gets the same ids however the evaluation is batched and sharded.
"""
from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
  from nupa_jax.evaluation.questions import Batch

Draw = Callable[[Sequence[int], int, int, Sequence[tuple[int, ...]]], np.ndarray]


def as_in_training(sample_lengths: Sequence[int], width: int, max_position: int,
                   seeds: Sequence[tuple[int, ...]]) -> np.ndarray:
  """int32[rows, width]: row i's first n_i = sample_lengths[i] ids are a uniformly random sorted
  n_i-subset of [0, M) drawn from seeds[i]; the ids after them go on by ones, up to M - 1. A row
  narrower than its draw keeps the draw's first `width` ids, so that a question's ids do not
  depend on the width of the batch it lands in."""
  too_long = [int(n) for n in sample_lengths if n > max_position]
  if too_long:
    raise ValueError(f"cannot draw {max(too_long)} distinct position ids below the PE's "
                     f"random_positions={max_position}")
  out = np.empty((len(sample_lengths), width), np.int32)
  for row, (length, seed) in enumerate(zip(sample_lengths, seeds)):
    drawn = np.sort(np.random.default_rng(list(seed)).choice(max_position, int(length),
                                                             replace=False))
    after = drawn[-1] + np.arange(1, max(width - len(drawn), 0) + 1)
    out[row] = np.minimum(np.concatenate([drawn, after])[:width], max_position - 1)
  return out


@dataclasses.dataclass(frozen=True)
class Rule:
  """How an evaluation gives its questions ids: `draw` (None: the decoder's own 0, 1, 2, ...;
  every draw stays below the PE's M), over the per-row sample lengths `lengths(batch)` picks
  from an `evaluation.questions.Batch`."""
  draw: Draw | None
  lengths: Callable[[Batch], np.ndarray] = lambda batch: batch.sample_lengths


DEFAULT_RULE = "consecutive"  # the paper's protocol; results files without a rule used it
RULES: dict[str, Rule] = {
    DEFAULT_RULE: Rule(None),
    "training": Rule(as_in_training),
    "training_longest": Rule(as_in_training, lambda batch: batch.longest_sample_lengths),
}


def question_seed(sample_seed: int, question_id: str) -> tuple[int, int]:
  """The seed of a question's ids: the evaluation's sample seed and the question's id."""
  return sample_seed % 2**32, zlib.crc32(question_id.encode())
