"""Exact non-negative numbers in the four NUPA representations: syntax, parts, values.

A number is split into *parts* (paper A.1.7): the unit in which digit match and dlength align
digits and in which the text layer reverses, pads and hints. Integer-like parts align from the
right (least significant digit), decimal parts from the left.
"""
import re

REPRS = ("int", "float", "frac", "sci")

PARTS = {
    "int": ("int",),
    "float": ("int", "dec"),
    "frac": ("num", "den"),
    "sci": ("int", "dec", "exp"),
}

PART_ALIGN = {"int": "right", "dec": "left", "num": "right", "den": "right", "exp": "right"}

_SYNTAX = {
    "int": re.compile(r"(\d+)"),
    "float": re.compile(r"(\d+)\.(\d+)"),
    "frac": re.compile(r"(\d+)/(\d+)"),
    "sci": re.compile(r"(\d+)\.(\d+)e(\d+)"),
}

_SEPARATORS = {"int": (), "float": (".",), "frac": ("/",), "sci": (".", "e")}


def check_repr(repr_name: str) -> None:
  if repr_name not in _SYNTAX:
    raise ValueError(f"unknown number representation {repr_name!r}; known: {', '.join(REPRS)}")


def split_parts(text: str, repr_name: str) -> tuple[str, ...] | None:
  """Digit strings of each part as written, or None if `text` is not of that form."""
  check_repr(repr_name)
  match = _SYNTAX[repr_name].fullmatch(text)
  return match.groups() if match else None


def join_parts(parts: tuple[str, ...] | list[str], repr_name: str) -> str:
  """Inverse of `split_parts`."""
  check_repr(repr_name)
  separators = _SEPARATORS[repr_name]
  if len(parts) != len(separators) + 1:
    raise ValueError(f"{repr_name} has {len(separators) + 1} parts, got {len(parts)}")
  out = [parts[0]]
  for sep, part in zip(separators, parts[1:]):
    out += [sep, part]
  return "".join(out)
