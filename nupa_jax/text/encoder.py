"""The one entry point from NUPA questions to token ids and back (used by data and evaluation).

A sample is written `[BOS] a <task> b = answer [EOS]` (unary tasks: `[BOS] <task> a = answer
[EOS]`), each number in the configured format (formats.py) and cut by the configured tokenizer
(tokenizer.py); the loss mask covers exactly the answer tokens (hints included) and EOS.

`positions` gives per-token features for Abacus and position coupling (positions.py).
"""
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from nupa_jax import numbers
from nupa_jax import tasks
from nupa_jax.text import formats
from nupa_jax.text import positions as positions_lib
from nupa_jax.text import tokenizer as tokenizer_lib

_HINTS = tokenizer_lib.HINTS_PER_KIND
_POSITIONS_CACHE_BYTES = 32 << 20  # memoized positions per encoder (by layout signature)


class _Step(NamedTuple):
  """One written part of a number."""
  part: int  # natural index of the part
  kind: str
  reverse: bool
  int_like: bool
  hint_id: int  # id of hint 0 of the part's kind; -1 when the number takes no hints
  separator_id: int  # the separator written before the part; -1 for the first part


@dataclasses.dataclass(frozen=True)
class _Slot:
  """One number of a task's sequence: how it is parsed, written and read back."""
  repr: str  # representation used to parse it ("int" for short arguments)
  formatted: bool  # False for short arguments: never padded, reversed or hinted
  layout: formats.Layout
  separator_ids: tuple[int, ...]  # written order
  steps: tuple[_Step, ...]  # written order

  def parse(self, text: str, what: str) -> tuple[str, ...]:
    parts = numbers.split_parts(text, self.repr)
    if parts is None:
      raise ValueError(f"{what} {text!r} is not a {self.repr} number")
    return parts


@dataclasses.dataclass(frozen=True)
class _Plan:
  """Everything about a task the encoder needs, resolved once."""
  task_id: int
  unary: bool
  operands: tuple[_Slot, ...]
  answer: _Slot
  pad_answer: bool  # answer widened to the operands' part widths
  signature_table: bytes  # token id -> its signature byte (positions.py)
  numbers_after: dict[int, positions_lib.PartOrder]  # signature byte -> the next number's parts
  positions_cache: dict[bytes, np.ndarray] = dataclasses.field(default_factory=dict)


class Encoder:
  """Encodes NUPA samples into token ids, decodes generated answers, computes positions.

  Args:
    tokenizer: `{"name": "digits", "k": 1|2|3, "align": "right"|"left"}` (default k=1, right) or
      `{"name": "random", "max_k": 2|3}`.
    format: `{"reverse": "none"|"int"|"dec"|"each"|"total", "pad": bool, "pad_answer": bool,
      "index_hints": bool, "hint_offset": int}`, all optional (default: plain text).
  Every option is checked here; unknown names and unsupported combinations raise ValueError.
  """

  pad_id, bos_id, eos_id, eq_id = (tokenizer_lib.PAD, tokenizer_lib.BOS, tokenizer_lib.EOS,
                                   tokenizer_lib.EQ)
  max_significance = positions_lib.MAX_SIGNIFICANCE

  def __init__(self, tokenizer: Mapping[str, Any] | None = None,
               format: Mapping[str, Any] | None = None):  # pylint: disable=redefined-builtin
    self._tokenizer = tokenizer_lib.make(tokenizer or {"name": "digits"})
    self._format = formats.Format.from_config(format, max_hint=_HINTS)
    self._vocab = vocab = tokenizer_lib.Vocab(self._tokenizer.max_chunk, tasks.kinds())
    self._number_ids = vocab.number_ids
    signature = bytearray([positions_lib.OTHER]) * len(vocab)
    for token, i in vocab.number_ids.items():
      signature[i] = ord(str(len(token)))
    signature[vocab.first_hint:vocab.first_task] = bytes([positions_lib.HINT]) * (
        vocab.first_task - vocab.first_hint)
    for sep_id in vocab.separator_ids.values():
      signature[sep_id] = positions_lib.SEPARATOR
    signature[tokenizer_lib.BOS] = positions_lib.BOS
    signature[tokenizer_lib.EQ] = positions_lib.EQ
    self._signature_table = bytes(signature)  # plans add their task token
    self._one_digit = self._tokenizer.max_chunk == 1
    self._plans: dict[str, _Plan] = {}
    self._cached_bytes = 0
    for name in tasks.names():
      self._plan(name)

  @property
  def vocab_size(self) -> int:
    return len(self._vocab)

  @property
  def tokens(self) -> list[str]:
    """Token strings by id."""
    return list(self._vocab.tokens)

  def render(self, tokens: Sequence[int] | np.ndarray) -> str:
    """Tokens as readable text, one space between tokens, e.g. `[BOS] 12 345 <add> 6 = ...`."""
    names = self._vocab.tokens
    return " ".join(names[t] if 0 <= t < len(names) else f"?{t}"
                    for t in np.asarray(tokens).tolist())

  # ---------------------------------------------------------------- plans
  def _slot(self, repr_name: str) -> _Slot:
    formatted = repr_name != "short"
    repr_name = repr_name if formatted else "int"
    layout = (self._format if formatted else formats.Format()).layout(repr_name)
    separator_ids = tuple(self._vocab.separator_ids[s] for s in layout.separators)
    hints = formatted and self._format.index_hints
    steps = tuple(_Step(
        p, layout.kinds[p], layout.reversed[p], layout.kinds[p] in formats.INT_LIKE,
        self._vocab.hint_base(layout.kinds[p]) if hints else -1,
        separator_ids[w - 1] if w else -1) for w, p in enumerate(layout.order))
    return _Slot(repr_name, formatted, layout, separator_ids, steps)

  def _plan(self, name: str) -> _Plan:
    plan = self._plans.get(name)
    if plan is None:
      task = tasks.get(name)
      task_id = self._vocab.task_id(task.kind)
      operands = tuple(self._slot(r) for r in task.arg_reprs)
      answer = self._slot(task.answer_repr)
      signature = bytearray(self._signature_table)
      signature[task_id] = positions_lib.TASK
      first = {positions_lib.TASK: operands[0]} if task.unary else {
          positions_lib.BOS: operands[0], positions_lib.TASK: operands[1]}
      plan = _Plan(
          task_id=task_id, unary=task.unary, operands=operands, answer=answer,
          pad_answer=(self._format.pad_answer and not task.unary
                      and set(task.arg_reprs) == {task.answer_repr}),
          signature_table=bytes(signature),
          numbers_after={byte: tuple((step.reverse, step.int_like) for step in slot.steps)
                         for byte, slot in {**first, positions_lib.EQ: answer}.items()})
      self._plans[name] = plan
    return plan

  # ---------------------------------------------------------------- encoding
  def encode(self, task: str, a: str, b: str | None, answer: str | None,
             rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Token ids (int32[T]) and loss mask (bool[T]) of one sample.

    `answer=None` gives the prompt through `=` with an all-False mask (for generation). `rng`
    draws the random tokenizer's cuts and the hint offset; without it the random tokenizer cuts
    the question its fixed way (tokenizer.py) and hints start at 0.
    """
    plan = self._plan(task)
    if plan.unary != (b is None):
      raise ValueError(f"{task} takes {1 if plan.unary else 2} operand(s); got b={b!r}")
    parts = [plan.operands[0].parse(a, "operand")]
    if b is not None:
      parts.append(plan.operands[1].parse(b, "operand"))
    answer_parts = None if answer is None else plan.answer.parse(answer, "answer")
    if self._format.pad:
      parts, answer_parts = self._pad(plan, parts, answer_parts)
    offset, draws = 0, None
    if rng is not None and (self._tokenizer.random or self._format.hint_offset):
      draws = tokenizer_lib.Draws.from_generator(rng)
      offset = draws.below(self._format.hint_offset + 1)
    elif self._tokenizer.random:
      draws = tokenizer_lib.Draws.seeded(f"{task}|{a}|{b}")
    cut = self._tokenizer.cutter(draws)
    out = [tokenizer_lib.BOS]
    if plan.unary:
      out.append(plan.task_id)
      self._emit(out, parts[0], plan.operands[0], cut, offset)
    else:
      self._emit(out, parts[0], plan.operands[0], cut, offset)
      out.append(plan.task_id)
      self._emit(out, parts[1], plan.operands[1], cut, offset)
    out.append(tokenizer_lib.EQ)
    prompt_length = len(out)
    if answer_parts is not None:
      self._emit(out, answer_parts, plan.answer, cut, offset)
      out.append(tokenizer_lib.EOS)
    mask = np.zeros(len(out), np.bool_)
    mask[prompt_length:] = True
    return np.array(out, np.int32), mask

  def _pad(self, plan: _Plan, parts: list, answer_parts: tuple[str, ...] | None):
    """Pads operands (and the answer where the plan says so) to the operands' part widths."""
    widths = formats.pad_widths([p for slot, p in zip(plan.operands, parts) if slot.formatted])
    parts = [formats.pad(p, slot.layout.kinds, widths) if slot.formatted else p
             for slot, p in zip(plan.operands, parts)]
    if plan.pad_answer and answer_parts is not None:
      answer_parts = formats.pad(answer_parts, plan.answer.layout.kinds, widths)
    return parts, answer_parts

  def _emit(self, out: list[int], parts: Sequence[str], slot: _Slot, cut, offset: int) -> None:
    """Appends the tokens of one number, given its natural-order parts, to `out`."""
    ids = self._number_ids
    for part, kind, reverse, int_like, hint_id, separator_id in slot.steps:
      if separator_id >= 0:
        out.append(separator_id)
      digits = parts[part]
      if self._one_digit:  # the common case, without the general chunk bookkeeping
        written = digits[::-1] if reverse else digits
        if hint_id < 0:
          out += map(ids.__getitem__, written)
          continue
        anchors = range(len(digits) - 1, -1, -1) if int_like else range(len(digits))
        for anchor, digit in zip(anchors[::-1] if reverse else anchors, written):
          out += (hint_id + (anchor + offset) % _HINTS, ids[digit])
        continue
      n, start, chunks = len(digits), 0, []
      for length in cut(n, kind):
        chunks.append((start, length))
        start += length
      if reverse:
        chunks.reverse()
      for start, length in chunks:
        if hint_id >= 0:
          out.append(hint_id + ((n - start - length if int_like else start) + offset) % _HINTS)
        chunk = digits[start:start + length]
        out.append(ids[chunk[::-1] if reverse else chunk])

  # ---------------------------------------------------------------- decoding
  def fits(self, tokens: Sequence[int] | np.ndarray) -> bool:
    """True: digit text has no context budget (`SampleEncoder`)."""
    del tokens
    return True

  def decode_answer(self, task: str, generated: Sequence[int] | np.ndarray) -> str:
    """The plain answer text from the tokens a model generated after `=`; "" if not an answer.

    Reads up to the first EOS (or PAD), ignores what follows, drops hint tokens (where the
    format has them), undoes reverse and answer padding. Anything else out of place (a special
    or task token, an empty part, a wrong separator) makes the answer invalid. The text is
    returned as the model wrote it (an unreduced fraction stays unreduced), for metrics to judge.
    """
    plan = self._plan(task)
    slot = plan.answer
    hints_allowed = slot.steps[0].hint_id >= 0
    table, names = plan.signature_table, self._vocab.tokens
    written: list[list[str]] = [[]]
    separators = []
    for t in np.asarray(generated).tolist():
      if t in (tokenizer_lib.EOS, tokenizer_lib.PAD):
        break
      kind = table[t] if 0 <= t < len(table) else positions_lib.OTHER
      if kind == positions_lib.SEPARATOR:
        separators.append(t)
        written.append([])
      elif kind in positions_lib.NUMBER:
        written[-1].append(names[t])
      elif not (kind == positions_lib.HINT and hints_allowed):
        return ""
    if tuple(separators) != slot.separator_ids or not all(written):
      return ""
    parts = formats.read(["".join(w) for w in written], slot.layout)
    if plan.pad_answer:
      parts = formats.unpad(parts, slot.layout.kinds)
    return numbers.join_parts(parts, slot.repr)

  # ---------------------------------------------------------------- positions
  def positions(self, task: str, tokens: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
    """`{"digit_index": int32[T], "significance": int32[T]}` (conventions: positions.py).

    Works on whole samples, prompts and partial or malformed generations alike.
    """
    plan = self._plan(task)
    toks = np.asarray(tokens).tolist()
    try:
      signature = bytes(map(plan.signature_table.__getitem__, toks))
    except IndexError:  # ids beyond the vocabulary: not part of any number
      signature = bytes(plan.signature_table[t] if 0 <= t < self.vocab_size
                        else positions_lib.OTHER for t in toks)
    both = plan.positions_cache.get(signature)
    if both is None:
      both = positions_lib.from_signature(signature, plan.numbers_after)
      if self._cached_bytes < _POSITIONS_CACHE_BYTES:
        plan.positions_cache[signature] = both
        self._cached_bytes += both.nbytes + len(signature)
    return {"digit_index": both[0].copy(), "significance": both[1].copy()}
