"""Formats: the paper's reverse examples, padding, and exact inverses on random numbers."""
import fractions
import re

import numpy as np
import pytest

from nupa_jax import numbers
from nupa_jax.text import formats

MODES = tuple(formats.REVERSE_MODES)


def fmt(**options):
  return formats.Format.from_config(options, max_hint=128)


@pytest.mark.parametrize("mode,expected", [
    ("none", "12.345"), ("int", "21.345"), ("dec", "12.543"), ("each", "21.543"),
    ("total", "543.21")])
def test_paper_reverse_table(mode, expected):
  assert formats.render("12.345", "float", fmt(reverse=mode)) == expected


@pytest.mark.parametrize("text,repr_name,mode,expected", [
    ("12/345", "frac", "int", "21/543"), ("12/345", "frac", "dec", "12/345"),
    ("12/345", "frac", "total", "543/21"), ("1.23e45", "sci", "int", "1.23e54"),
    ("1.23e45", "sci", "dec", "1.32e45"), ("1.23e45", "sci", "each", "1.32e54"),
    ("1.23e45", "sci", "total", "54e32.1"), ("1200", "int", "dec", "1200"),
    ("1200", "int", "total", "0021")])
def test_reverse_other_representations(text, repr_name, mode, expected):
  assert formats.render(text, repr_name, fmt(reverse=mode)) == expected


def _random_number(rng, repr_name):
  def digits():
    return "".join(map(str, rng.integers(0, 10, size=rng.integers(1, 8))))
  return numbers.join_parts([digits() for _ in numbers.PARTS[repr_name]], repr_name)


def _independent_render(text, mode):
  """Reference: reverse with regular expressions on the raw string."""
  if mode == "total":
    return text[::-1]
  reverse_int, reverse_dec = mode in ("int", "each"), mode in ("dec", "each")
  # A decimal part is a digit run right after '.'; every other run is integer-like.
  def rewrite(match):
    is_dec = match.start() and text[match.start() - 1] == "."
    return match.group()[::-1] if (reverse_dec if is_dec else reverse_int) else match.group()
  return re.sub(r"\d+", rewrite, text)


@pytest.mark.parametrize("repr_name", numbers.REPRS)
@pytest.mark.parametrize("mode", MODES)
def test_render_matches_string_reference_and_inverts(repr_name, mode):
  rng = np.random.default_rng(0)
  layout = fmt(reverse=mode).layout(repr_name)
  for _ in range(50):
    text = _random_number(rng, repr_name)
    assert formats.render(text, repr_name, fmt(reverse=mode)) == _independent_render(text, mode)
    parts = numbers.split_parts(text, repr_name)
    assert formats.read(formats.write(parts, layout), layout) == list(parts)


def test_pad_to_longest_part_of_the_question():
  operands = [numbers.split_parts(t, "float") for t in ("12.5", "345.125")]
  widths = formats.pad_widths(operands)
  assert widths == (3, 3)
  assert [formats.render(t, "float", fmt(pad=True), widths) for t in ("12.5", "345.125")] == [
      "012.500", "345.125"]
  assert formats.render("7/12", "frac", fmt(pad=True, reverse="int"), (3, 4)) == "700/2100"
  assert formats.render("1.5e7", "sci", fmt(pad=True), (1, 3, 2)) == "1.500e07"


@pytest.mark.parametrize("repr_name", numbers.REPRS)
def test_unpad_inverts_pad_on_canonical_numbers(repr_name):
  rng = np.random.default_rng(1)
  kinds = numbers.PARTS[repr_name]
  for _ in range(200):
    scale = int(rng.integers(1, 999)) if repr_name == "frac" else 10 ** int(rng.integers(0, 6))
    value = fractions.Fraction(int(rng.integers(0, 10**6)), scale)
    value += repr_name == "sci"  # scientific numbers are >= 1
    canonical = numbers.format(int(value) if repr_name == "int" else value, repr_name)
    parts = numbers.split_parts(canonical, repr_name)
    widths = [len(p) + int(rng.integers(0, 4)) for p in parts]
    assert formats.unpad(formats.pad(parts, kinds, widths), kinds) == list(parts)


@pytest.mark.parametrize("options,message", [
    ({"reverse": "both"}, "unknown reverse mode 'both'; known: none, int, dec, each, total"),
    ({"padding": True}, "unknown format option(s) 'padding'"),
    ({"pad": 1}, "pad must be True or False"),
    ({"pad_answer": True}, "pad_answer=True needs pad=True"),
    ({"hint_offset": 3}, "hint_offset > 0 needs index_hints=True"),
    ({"index_hints": True, "hint_offset": 128}, "hint_offset must be an integer in [0, 127]"),
])
def test_config_errors(options, message):
  with pytest.raises(ValueError, match=re.escape(message)):
    fmt(**options)
