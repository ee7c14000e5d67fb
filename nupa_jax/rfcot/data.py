"""RF-CoT as a data mode of the training pipeline: the same batches, RF-CoT text inside.

A run selects it with `config.text.tokenizer = {"name": "rfcot", "text_tokenizer": "char" |
"digits" | PATH, "context": 2048}` (configs/rfcot.py); mode.py registers it as the `rfcot` text
mode (`nupa_jax.runmode`), which the trainer resolves. Its pipeline,
`nupa_jax.data.Pipeline(*nupa_jax.data.run_config(config))`, is an ordinary one (batch layout of
docs/interfaces.md) with:
- the RF-CoT encoder (encoding.py): `[BOS] prompt response [EOS]`, the loss mask off on BOS
  and the prompt, on for the whole response and EOS;
- one sample a row (`packing="padded"`) and rows of `context` positions (`seq_len`): a sample
  over the budget cannot fit its row, so the pipeline replaces it with a fresh draw of the
  mixture and counts it in `stats()["overflow_redraws"]` (each `train_metrics.jsonl` line
  has its interval's count) — dropped and counted, as the paper
  ignored every sample over its 2000-token limit;
- each task's training lengths cut to those whose probe questions fit (`fitting_lengths`,
  the pipeline's own per-cell probe): the pipeline refuses a cell whose probe overflows its
  rows, and at such a length nearly every draw would be dropped anyway. A task that does not
  fit at its shortest length is left out, with a warning (`configure`).
The evaluator works unchanged with the encoder: prompts through "Response:", generation up to
the longest true response of a batch, answers read after "So the answer is".
"""
from __future__ import annotations

import copy

import ml_collections
import numpy as np
from absl import logging

from nupa_jax import settings
from nupa_jax.data import mixture as mixture_lib
from nupa_jax.data import settings as settings_lib
from nupa_jax.data import source as source_lib
from nupa_jax.rfcot import cot
from nupa_jax.rfcot.encoding import Encoder

MODE = "rfcot"  # config.text.tokenizer["name"] of an RF-CoT run


def tokenizer_config(config: ml_collections.ConfigDict) -> dict:
  """`config.text.tokenizer` as a plain dict ({} if absent)."""
  text = config.get("text") or {}
  return settings.plain(text.get("tokenizer")) or {}


def encoder_from_config(config: ml_collections.ConfigDict) -> Encoder:
  """The RF-CoT encoder of `config.text.tokenizer` (`text_tokenizer`, `context`)."""
  options = dict(tokenizer_config(config))
  if options.pop("name", None) != MODE:
    raise ValueError(f"config.text.tokenizer is not an RF-CoT one (name {MODE!r})")
  unknown = sorted(set(options) - {"text_tokenizer", "context"})
  if unknown:
    raise ValueError(f"unknown RF-CoT tokenizer options {unknown}; known: text_tokenizer, context")
  return Encoder(options.get("text_tokenizer", "char"), int(options.get("context", 2048)))


def fitting_lengths(encoder: Encoder, task: str, lengths: tuple[int, ...]) -> tuple[int, ...]:
  """The longest prefix of `lengths` (ascending) whose cells pass the pipeline's probe: every
  probe question of the cell takes at most `encoder.context` positions."""
  out = []
  for length in lengths:
    cell = mixture_lib.Mixture((task,), (length,), np.ones(1))
    if source_lib.cell_positions(cell, encoder)[1] > encoder.context:
      break
    out.append(length)
  return tuple(out)


def configure(config: ml_collections.ConfigDict,
              encoder: Encoder | None = None) -> ml_collections.ConfigDict:
  """A copy of `config` whose data fields make RF-CoT batches: padded rows of `context`
  positions, each task's lengths cut to those that fit (`config.data.task_digits`), and a task
  of which not even the shortest length fits left out with a warning (ValueError if none fits,
  or if a task has no RF-CoT rule)."""
  encoder = encoder or encoder_from_config(config)
  out = copy.deepcopy(config)
  out.data.packing = "padded"
  out.data.seq_len = encoder.context
  mixture = settings_lib.Settings.from_config(out).mixture
  shares, task_digits = mixture.task_probs(), {}
  for task, lengths in mixture.task_lengths().items():
    cot.rule_name(task)  # ValueError naming the tasks that have a rule
    fit = fitting_lengths(encoder, task, tuple(sorted(lengths)))
    if not fit:
      logging.warning("RF-CoT: leaving out %s: no sample of %d digits fits %d positions with "
                      "tokenizer %s", task, min(lengths), encoder.context, encoder.tokenizer_name)
      continue
    if len(fit) < len(lengths):
      logging.info("RF-CoT: training %s on %d-%d digits (longer samples exceed %d positions)",
                   task, fit[0], fit[-1], encoder.context)
    task_digits[task] = (fit[0], fit[-1])
  if not task_digits:
    raise ValueError(f"no task of config.data.tasks has an RF-CoT sample within "
                     f"{encoder.context} positions with tokenizer {encoder.tokenizer_name}; "
                     "raise the context (config.text.tokenizer['context'])")
  out.data.tasks = {task: shares[task] for task in task_digits}
  out.data.task_digits = task_digits
  return out

