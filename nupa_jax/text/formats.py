"""How numbers are written for a model: reverse, zero padding, index hints (paper §3.3, A.4.3).

Every format is a rewrite of the digit strings of a number's parts (`numbers.PARTS`) that keeps
the number recoverable, so the answer a model writes can be turned back into plain text:

- `reverse` (paper Table 4, on 12.345): `none` 12.345; `int` 21.345 reverses the integer-like
  parts (integer part, numerator, denominator, exponent); `dec` 12.543 reverses decimal parts;
  `each` 21.543 reverses every part in place; `total` 543.21 reverses the whole string, so the
  parts also come in reverse order (`1.23e45` -> `54e32.1`). Modes that touch no part of a
  representation (`dec` on an integer) leave it as it is.
- `pad`: every part of every operand is widened with zeros, on the side away from its alignment
  anchor (`numbers.PART_ALIGN`: leading zeros for integer-like parts, trailing zeros for decimal
  parts), to the longest part of that kind among the question's operands. `pad_answer` also
  widens the answer, to the operands' widths, for the tasks whose answer lines up digit by digit
  with its operands: binary tasks whose two operands and answer share one representation (add,
  sub, multiply, max, digit_add, ...). Their canonical answers carry no leading zeros and no
  trailing decimal zeros beyond one digit, so stripping the zeros again is exact. Conversions,
  sig (whose trailing zeros are significant) and the digit / count / length answers of
  get_digit, count and length are never padded (they are reversed and hinted like any integer).
- `index_hints` (Zhou et al. 2023): a hint token before every number token. A hint names the
  place of the token's digit nearest the part's alignment anchor (integer-like parts: its power
  of ten, 0 at the units; decimal parts: 0 at the first decimal), in one hint alphabet per part
  kind, so digits of equal significance carry the same hint in operands and answer. Hints stay
  in front of their token whatever the reversal. Indices wrap around modulo the alphabet size
  (tokenizer.HINTS_PER_KIND = 128; only the longest parts, such as the mantissas of to_scient on
  100-digit floats, get there). `hint_offset`
  > 0 shifts all hints of a training sample by one offset drawn from [0, hint_offset], so that
  long numbers at test time meet hints seen in training; without an rng hints start at 0.

Short integer arguments (a position, a digit, a number of significant figures) are never
padded, reversed or hinted; the encoder keeps them out of this module.
"""
import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from nupa_jax import numbers

INT_LIKE = frozenset(kind for kind, align in numbers.PART_ALIGN.items() if align == "right")


@dataclasses.dataclass(frozen=True)
class _Reverse:
  kinds: frozenset[str]  # the part kinds written backwards
  order: bool  # whether the parts themselves come in reverse order


REVERSE_MODES: dict[str, _Reverse] = {
    "none": _Reverse(frozenset(), order=False),
    "int": _Reverse(INT_LIKE, order=False),
    "dec": _Reverse(frozenset(numbers.PART_ALIGN) - INT_LIKE, order=False),
    "each": _Reverse(frozenset(numbers.PART_ALIGN), order=False),
    "total": _Reverse(frozenset(numbers.PART_ALIGN), order=True),
}


def separators(repr_name: str) -> tuple[str, ...]:
  """The characters between a representation's parts, in natural order (`sci`: '.', 'e')."""
  return tuple(numbers.join_parts(("",) * len(numbers.PARTS[repr_name]), repr_name))


@dataclasses.dataclass(frozen=True)
class Layout:
  """How one number of a representation is written: which parts, in what order, which backwards."""
  kinds: tuple[str, ...]  # part kinds in natural order
  order: tuple[int, ...]  # the natural index of each written part
  reversed: tuple[bool, ...]  # per natural part: written backwards
  separators: tuple[str, ...]  # between the written parts, in written order


@dataclasses.dataclass(frozen=True)
class Format:
  """A validated format configuration; see the module docstring for each option."""
  reverse: str = "none"
  pad: bool = False
  pad_answer: bool = False
  index_hints: bool = False
  hint_offset: int = 0

  @classmethod
  def from_config(cls, config: Mapping[str, Any] | None, max_hint: int) -> "Format":
    """Checks a `{"reverse": ..., "pad": ..., ...}` mapping; `max_hint`: hints per alphabet."""
    config = dict(config or {})
    known = [field.name for field in dataclasses.fields(cls)]
    unknown = sorted(set(config) - set(known))
    if unknown:
      raise ValueError(f"unknown format option(s) {', '.join(map(repr, unknown))}; "
                       f"known: {', '.join(known)}")
    fmt = cls(**config)
    if fmt.reverse not in REVERSE_MODES:
      raise ValueError(f"unknown reverse mode {fmt.reverse!r}; known: {', '.join(REVERSE_MODES)}")
    for flag in ("pad", "pad_answer", "index_hints"):
      if not isinstance(getattr(fmt, flag), bool):
        raise ValueError(f"format option {flag} must be True or False, got {getattr(fmt, flag)!r}")
    if fmt.pad_answer and not fmt.pad:
      raise ValueError("pad_answer=True needs pad=True (answers pad to the operands' widths)")
    offset = fmt.hint_offset
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < max_hint:
      raise ValueError(f"hint_offset must be an integer in [0, {max_hint - 1}], "
                       f"got {fmt.hint_offset!r}")
    if fmt.hint_offset and not fmt.index_hints:
      raise ValueError("hint_offset > 0 needs index_hints=True")
    return fmt

  @functools.cache
  def layout(self, repr_name: str) -> Layout:
    """The written layout of a number of representation `repr_name`."""
    kinds = numbers.PARTS[repr_name]
    mode = REVERSE_MODES[self.reverse]
    order = tuple(range(len(kinds)))
    seps = separators(repr_name)
    if mode.order:
      order, seps = order[::-1], seps[::-1]
    return Layout(kinds, order, tuple(kind in mode.kinds for kind in kinds), seps)


def pad_widths(operands: Sequence[Sequence[str]]) -> tuple[int, ...]:
  """Part by part, the longest digit string among `operands` (parts of one representation)."""
  return tuple(max(len(part) for part in column) for column in zip(*operands))


def pad(parts: Sequence[str], kinds: Sequence[str], widths: Sequence[int]) -> list[str]:
  """Widens parts with zeros away from their anchor: leading (integer-like), trailing (decimal)."""
  return [part.rjust(width, "0") if kind in INT_LIKE else part.ljust(width, "0")
          for part, kind, width in zip(parts, kinds, widths)]


def unpad(parts: Sequence[str], kinds: Sequence[str]) -> list[str]:
  """Inverse of `pad` on canonical numbers: drops padding zeros, keeping at least one digit."""
  return [(part.lstrip("0") if kind in INT_LIKE else part.rstrip("0")) or "0"
          for part, kind in zip(parts, kinds)]


def write(parts: Sequence[str], layout: Layout) -> list[str]:
  """The parts in written order, each reversed where the layout says so."""
  return [parts[p][::-1] if layout.reversed[p] else parts[p] for p in layout.order]


def read(written: Sequence[str], layout: Layout) -> list[str]:
  """Inverse of `write`: natural-order parts from written-order parts."""
  parts = [""] * len(layout.kinds)
  for part, p in zip(written, layout.order):
    parts[p] = part[::-1] if layout.reversed[p] else part
  return parts


def render(text: str, repr_name: str, fmt: Format, widths: Sequence[int] | None = None) -> str:
  """`text` written in format `fmt` (without hints), e.g. ('12.345', 'float', total) -> '543.21'.

  `widths` are the padding widths (`pad_widths` of the question); None leaves it unpadded.
  """
  parts = numbers.split_parts(text, repr_name)
  if parts is None:
    raise ValueError(f"{text!r} is not a {repr_name} number")
  layout = fmt.layout(repr_name)
  if widths is not None:
    parts = pad(parts, layout.kinds, widths)
  written = write(parts, layout)
  out = [written[0]]
  for sep, part in zip(layout.separators, written[1:]):
    out += [sep, part]
  return "".join(out)
