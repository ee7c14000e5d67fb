"""Every task x every tokenizer x every format: exact round trips, checked against references.

For each sample: the loss mask is one run of answer tokens and EOS at the end; the prompt alone
is the sample up to `=`; the answer decodes back exactly (with junk after EOS); each operand and
the answer, read from the tokens, is the number written as an independent string reference
says (zero padding, reversal); hints sit before every number token and agree with
significance up to one offset; digit_index counts each part's tokens 1, 2, ...; and
significance reproduces each part's value: the sum of token x 10^significance over a part is
the part itself.
"""
import fractions
import functools
import itertools
import re

import numpy as np
import pytest

from nupa_jax import numbers
from nupa_jax import tasks
from nupa_jax.text import Encoder, SIGNIFICANCE_UNITS

U = SIGNIFICANCE_UNITS
TOKENIZERS = [{"name": "digits", "k": k, "align": align}
              for k in (1, 2, 3) for align in ("right", "left")]
TOKENIZERS += [{"name": "random", "max_k": max_k} for max_k in (2, 3)]
FORMATS = [{"reverse": reverse, **pad, **hints}
           for reverse in ("none", "int", "dec", "each", "total")
           for pad in ({}, {"pad": True}, {"pad": True, "pad_answer": True})
           for hints in ({}, {"index_hints": True, "hint_offset": 7})]
COMBINATIONS = list(itertools.product(range(len(TOKENIZERS)), range(len(FORMATS))))
REVERSED_KINDS = {"none": (), "int": ("int", "num", "den", "exp"), "dec": ("dec",),
                  "each": ("int", "dec", "num", "den", "exp"),
                  "total": ("int", "dec", "num", "den", "exp")}
POOL_LENGTHS = (1, 2, 3, 4, 6, 8, 11, 15, 20, 30, 60, 100)


@functools.cache
def question_pool(task_name):
  """(a, b, answer) for a spread of lengths up to the task's maximum."""
  task = tasks.get(task_name)
  rng = np.random.default_rng(list(task_name.encode()))
  pool = []
  for length in POOL_LENGTHS * 2:
    if length <= task.max_digits:
      a, b = task.sample(rng, length)
      pool.append((a, b, task.solve(a, b)))
  return pool


def reference_written(text, repr_name, reverse, widths):
  """The number as the format writes it, by plain string operations."""
  kinds = numbers.PARTS[repr_name]
  parts = re.findall(r"\d+", text)
  separators = re.findall(r"\D", text)
  if widths is not None:
    parts = [p.ljust(w, "0") if kind == "dec" else p.rjust(w, "0")
             for p, kind, w in zip(parts, kinds, widths)]
  if reverse != "total":
    parts = [p[::-1] if kind in REVERSED_KINDS[reverse] else p for p, kind in zip(parts, kinds)]
  written = "".join(p + s for p, s in itertools.zip_longest(parts, separators, fillvalue=""))
  return written[::-1] if reverse == "total" else written


def number_spans(rendered, task):
  """Sequence indices of each number of a rendered sample: operands then answer."""
  eq = rendered.index("=")
  kind_at = rendered.index(f"<{task.kind}>")
  end = rendered.index("[EOS]")
  spans = [(kind_at + 1, eq)] if task.unary else [(1, kind_at), (kind_at + 1, eq)]
  return [range(lo, hi) for lo, hi in spans + [(eq + 1, end)]]


def check_number(rendered, indices, positions, text, repr_name, fmt, widths):
  """Checks one number's tokens against the references; returns the hint offsets it used."""
  formatted = repr_name != "short"
  repr_name = repr_name if formatted else "int"
  reverse = fmt["reverse"] if formatted else "none"
  hints = formatted and fmt.get("index_hints", False)
  tokens = [rendered[i] for i in indices]
  digits = [(t, i) for t, i in zip(tokens, indices) if ":" not in t]
  assert "".join(t for t, _ in digits) == reference_written(text, repr_name, reverse, widths)
  is_hint = [":" in t for t in tokens]
  if hints:  # exactly one hint right before each number token
    assert is_hint == [tokens[j + 1].isdigit() if j + 1 < len(tokens) else False
                       for j in range(len(tokens))]
    assert all(is_hint[j - 1] for j, t in enumerate(tokens) if t.isdigit())
  else:
    assert not any(is_hint)
  digit_index, significance = positions["digit_index"], positions["significance"]
  kinds = numbers.PARTS[repr_name][::-1] if reverse == "total" else numbers.PARTS[repr_name]
  parts = [list(group) for is_sep, group in itertools.groupby(digits, lambda d: not d[0].isdigit())
           if not is_sep]
  values = numbers.split_parts(text, repr_name)
  offsets = set()
  for kind, part, value in zip(kinds, parts, values[::-1] if reverse == "total" else values):
    assert [digit_index[i] for _, i in part] == list(range(1, len(part) + 1))
    backwards = kind in REVERSED_KINDS[reverse]
    total = fractions.Fraction(0)
    for token, i in part:
      chunk = token[::-1] if backwards else token
      power = significance[i] - U - (len(chunk) - 1 if kind == "dec" else 0)
      total += int(chunk) * fractions.Fraction(10) ** power
      if hints:  # hint index = anchor digit's place + one offset per sample
        hint_kind, hint = rendered[i - 1].split(":")
        place = significance[i] - U if kind != "dec" else U - 1 - significance[i]
        assert hint_kind == kind
        offsets.add((int(hint) - place) % 128)
    expected = fractions.Fraction(int(value), 10**len(value)) if kind == "dec" else int(value)
    assert total == expected
  return offsets


def check_sample(enc, fmt, task, a, b, answer, rng):
  tokens, mask = enc.encode(task.name, a, b, answer, rng)
  start = int(np.argmax(mask))
  assert not mask[:start].any() and mask[start:].all() and start > 0
  assert tokens[0] == enc.bos_id and tokens[start - 1] == enc.eq_id and tokens[-1] == enc.eos_id
  if rng is None:
    prompt, prompt_mask = enc.encode(task.name, a, b, None)
    np.testing.assert_array_equal(prompt, tokens[:start])
    assert not prompt_mask.any()
  junk = [enc.eos_id, enc.bos_id, 5, 17, enc.eq_id]
  assert enc.decode_answer(task.name, np.concatenate([tokens[start:], junk])) == answer
  positions = {key: value.tolist() for key, value in enc.positions(task.name, tokens).items()}
  # Reference widths: the longest part of each kind among the operands.
  operands = [(a, task.arg_reprs[0])] + ([] if task.unary else [(b, task.arg_reprs[1])])
  padded = [numbers.split_parts(t, r) for t, r in operands if r != "short"]
  widths = [max(map(len, column)) for column in zip(*padded)] if fmt.get("pad") else None
  pad_answer = (fmt.get("pad_answer") and not task.unary
                and set(task.arg_reprs) == {task.answer_repr})
  rendered = enc.render(tokens).split()
  spans = number_spans(rendered, task)
  numbered = set(itertools.chain(*spans))
  assert not any(positions["digit_index"][i] or positions["significance"][i]
                 for i in range(len(rendered)) if i not in numbered)
  offsets = set()
  texts = [(text, r, False) for text, r in operands] + [(answer, task.answer_repr, True)]
  for indices, (text, repr_name, is_answer) in zip(spans, texts):
    padded_here = widths and repr_name != "short" and (not is_answer or pad_answer)
    offsets |= check_number(rendered, indices, positions, text, repr_name, fmt,
                            widths if padded_here else None)
  assert len(offsets) <= 1 and (rng is not None or offsets <= {0})


def run_combination(tokenizer_index, format_index, per_task, fresh):
  """Checks `per_task` questions of every task: from the cached pool, or freshly drawn."""
  enc = Encoder(TOKENIZERS[tokenizer_index], FORMATS[format_index])
  fmt = FORMATS[format_index]
  seed = tokenizer_index * len(FORMATS) + format_index
  for t, name in enumerate(tasks.names()):
    task = tasks.get(name)
    pool = question_pool(name)
    draw = np.random.default_rng([seed, t])
    for j in range(per_task):
      if fresh:
        a, b = task.sample(draw, int(draw.integers(1, task.max_digits + 1)))
        answer = task.solve(a, b)
      else:
        a, b, answer = pool[(seed * per_task + j) % len(pool)]
      rng = np.random.default_rng([seed, t, j]) if j % 2 == 0 else None
      check_sample(enc, fmt, task, a, b, answer, rng)


@pytest.mark.parametrize("tokenizer_index,format_index", COMBINATIONS)
def test_round_trip(tokenizer_index, format_index):
  run_combination(tokenizer_index, format_index, per_task=2, fresh=False)


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer_index,format_index", COMBINATIONS)
def test_round_trip_many(tokenizer_index, format_index):
  run_combination(tokenizer_index, format_index, per_task=20, fresh=True)
