"""Tokenizers: the vocabulary, aligned k-digit cuts (paper Fig. 2) and random cuts (A.4.2)."""
import collections
import re

import numpy as np
import pytest

from nupa_jax.text import tokenizer


def cut(config, n, kind="int", draws=None):
  return list(tokenizer.make(config).cutter(draws)(n, kind))


def chunks(text, lengths):
  out, start = [], 0
  for length in lengths:
    out.append(text[start:start + length])
    start += length
  return out


def test_paper_long_number_cut_from_either_end():
  # Fig. 2: greedy left-to-right three-digit tokens vs tokens aligned at the units digit.
  number = "1234567"
  assert chunks(number, cut({"name": "digits", "k": 3, "align": "left"}, 7)) == [
      "123", "456", "7"]
  assert chunks(number, cut({"name": "digits", "k": 3, "align": "right"}, 7)) == [
      "1", "234", "567"]
  assert chunks(number, cut({"name": "digits", "k": 2, "align": "right"}, 7)) == [
      "1", "23", "45", "67"]
  assert chunks(number, cut({"name": "digits", "k": 1}, 7)) == list(number)


@pytest.mark.parametrize("align", ["left", "right"])
def test_decimal_parts_are_cut_from_the_point(align):
  assert cut({"name": "digits", "k": 3, "align": align}, 7, kind="dec") == [3, 3, 1]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_vocabulary(k):
  kinds = ("add", "sub", "max")
  vocab = tokenizer.Vocab(k, kinds)
  numbers = [t for t in vocab.tokens if t.isdigit()]
  assert numbers == sorted(numbers, key=lambda t: (len(t), t))
  assert set(numbers) == {str(i).zfill(length) for length in range(1, k + 1)
                          for i in range(10**length)}
  assert len(set(vocab.tokens)) == len(vocab.tokens)
  assert vocab.tokens[:7] == ["[PAD]", "[BOS]", "[EOS]", "=", ".", "/", "e"]
  assert len(vocab) == 7 + sum(10**j for j in range(1, k + 1)) + 5 * 128 + len(kinds)
  assert vocab.tokens[-len(kinds):] == [f"<{kind}>" for kind in kinds]
  assert vocab.tokens[vocab.hint_base("dec") + 3] == "dec:3"


def test_chunks_of_equal_digits_are_distinct_tokens():
  vocab = tokenizer.Vocab(3, ())
  assert len({vocab.ids["0"], vocab.ids["00"], vocab.ids["000"]}) == 3


def test_random_cut_lengths_are_uniform_and_cover_the_number():
  draws = tokenizer.Draws.from_generator(np.random.default_rng(0))
  counts = collections.Counter()
  for _ in range(3000):
    lengths = cut({"name": "random", "max_k": 3}, 50, draws=draws)
    assert sum(lengths) == 50 and all(1 <= length <= 3 for length in lengths)
    counts.update(lengths[:-1])  # the last chunk is clipped to what is left
  total = sum(counts.values())
  for length in (1, 2, 3):
    assert abs(counts[length] / total - 1 / 3) < 0.01


def test_random_cut_depends_on_the_draw_only():
  config = {"name": "random", "max_k": 2}
  def cut_with(seed):
    return cut(config, 40, draws=tokenizer.Draws.from_generator(np.random.default_rng(seed)))
  assert cut_with(1) == cut_with(1)
  assert cut_with(1) != cut_with(2)
  assert cut(config, 40, draws=tokenizer.Draws.seeded("q")) == cut(
      config, 40, draws=tokenizer.Draws.seeded("q"))


def test_draws_below_is_exact_for_every_modulus():
  draws = tokenizer.Draws.seeded("x")
  for m in (1, 2, 3, 7, 100, 256):
    values = collections.Counter(draws.below(m) for _ in range(4000))
    assert set(values) <= set(range(m))
    if m <= 7:
      assert set(values) == set(range(m))


@pytest.mark.parametrize("config,message", [
    ({"name": "bpe"}, "unknown tokenizer 'bpe'; known: digits, random"),
    ({"k": 2}, "unknown tokenizer None; known: digits, random"),
    ({"name": "digits", "k": 4}, "tokenizer 'digits': k=4 is not supported; supported: 1, 2, 3"),
    ({"name": "digits", "align": "center"}, "align='center' is not supported"),
    ({"name": "digits", "k": True}, "k=True is not supported"),
    ({"name": "random"}, "tokenizer 'random' needs 'max_k', one of [2, 3]"),
    ({"name": "random", "max_k": 3, "align": "left"},
     "unknown option(s) 'align' for tokenizer 'random'; known: max_k"),
])
def test_config_errors(config, message):
  with pytest.raises(ValueError, match=re.escape(message)):
    tokenizer.make(config)
