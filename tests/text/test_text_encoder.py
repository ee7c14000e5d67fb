"""Encoder: sequence layout, the paper's examples, positions by hand, decoding, config errors."""
import re

import ml_collections
import numpy as np
import pytest

from nupa_jax import numbers
from nupa_jax import tasks
from nupa_jax.text import Encoder, SIGNIFICANCE_UNITS

U = SIGNIFICANCE_UNITS


def encoder(k=1, align="right", **format_options):
  return Encoder({"name": "digits", "k": k, "align": align}, format_options)


def sample(enc, task, a, b, rng=None):
  """Rendered tokens of a full sample, answer from the task's own solver."""
  tokens, _ = enc.encode(task, a, b, tasks.get(task).solve(a, b), rng)
  return enc.render(tokens)


def operand(rendered):
  """The tokens of the first operand of a rendered binary sample."""
  return rendered.removeprefix("[BOS] ").split(" <")[0]


def test_sequence_layout_and_loss_mask():
  enc = encoder()
  tokens, mask = enc.encode("add_int", "12", "345", "357")
  assert enc.render(tokens) == "[BOS] 1 2 <add> 3 4 5 = 3 5 7 [EOS]"
  assert mask.tolist() == [False] * 8 + [True] * 4
  assert tokens.dtype == np.int32 and mask.dtype == np.bool_
  tokens, mask = enc.encode("to_scient_int", "1200", None, "1.2e3")
  assert enc.render(tokens) == "[BOS] <to_scient> 1 2 0 0 = 1 . 2 e 3 [EOS]"
  assert mask.tolist() == [False] * 7 + [True] * 6


def test_prompt_is_the_sample_up_to_the_equals_sign():
  enc = encoder(k=2, reverse="int", pad=True, index_hints=True)
  full, full_mask = enc.encode("sub_float", "123.45", "6.7", "116.75")
  prompt, mask = enc.encode("sub_float", "123.45", "6.7", None)
  assert prompt[-1] == enc.eq_id and not mask.any()
  np.testing.assert_array_equal(prompt, full[:len(prompt)])
  assert not full_mask[:len(prompt)].any() and full_mask[len(prompt):].all()


@pytest.mark.parametrize("mode,written", [
    ("none", "1 2 . 3 4 5"), ("int", "2 1 . 3 4 5"), ("dec", "1 2 . 5 4 3"),
    ("each", "2 1 . 5 4 3"), ("total", "5 4 3 . 2 1")])
def test_paper_reverse_examples_of_12_345(mode, written):
  rendered = sample(encoder(reverse=mode), "add_float", "12.345", "0.5")
  assert operand(rendered) == written


def test_paper_index_hints_of_an_integer():
  enc = encoder(index_hints=True)
  assert sample(enc, "add_int", "123", "45") == (
      "[BOS] int:2 1 int:1 2 int:0 3 <add> int:1 4 int:0 5 = int:2 1 int:1 6 int:0 8 [EOS]")
  # Reversed, each digit keeps its hint: equal significance, equal hint.
  assert operand(sample(encoder(index_hints=True, reverse="int"), "add_int", "123", "45")) == (
      "int:0 3 int:1 2 int:2 1")


def test_hint_offset_shifts_every_hint_of_a_sample_alike():
  enc = encoder(index_hints=True, hint_offset=5)
  offsets = set()
  for seed in range(40):
    rendered = sample(enc, "add_int", "123", "45", np.random.default_rng(seed))
    hints = [int(t.split(":")[1]) for t in rendered.split() if t.startswith("int:")]
    offset = hints[2]  # the units digit of the first operand
    assert hints == [offset + i for i in (2, 1, 0, 1, 0, 2, 1, 0)]
    offsets.add(offset)
  assert offsets == set(range(6))
  assert sample(enc, "add_int", "123", "45").startswith("[BOS] int:2 1")  # no rng: offset 0


@pytest.mark.parametrize("align,k,written", [
    ("right", 3, "1 234 567"), ("left", 3, "123 456 7"), ("right", 2, "1 23 45 67")])
def test_paper_k_digit_chunks_of_a_long_number(align, k, written):
  assert operand(sample(encoder(k=k, align=align), "add_int", "1234567", "8")) == written


def test_reversal_keeps_which_digits_share_a_token():
  assert operand(sample(encoder(k=3, reverse="int"), "add_int", "1234567", "8")) == "765 432 1"
  assert operand(sample(encoder(k=2, reverse="total"), "add_float", "12345.678", "1.0")) == (
      "8 76 . 54 32 1")


def test_padding_of_operands_and_answer():
  enc = encoder(pad=True)
  assert sample(enc, "add_float", "12.5", "345.125") == (
      "[BOS] 0 1 2 . 5 0 0 <add> 3 4 5 . 1 2 5 = 3 5 7 . 6 2 5 [EOS]")
  enc = encoder(pad=True, pad_answer=True)
  assert sample(enc, "sub_int", "1000", "999") == "[BOS] 1 0 0 0 <sub> 0 9 9 9 = 0 0 0 1 [EOS]"
  assert sample(enc, "add_float", "1.25", "2.75") == (
      "[BOS] 1 . 2 5 <add> 2 . 7 5 = 4 . 0 0 [EOS]")
  # Answers of another representation than the operands are never padded (sig: 1.0 is 2 s.f.).
  assert sample(enc, "sig_float", "1.04", "2").endswith("= 1 . 0 e 0 [EOS]")


def test_short_arguments_are_never_formatted():
  enc = encoder(reverse="each", pad=True, index_hints=True)
  rendered = sample(enc, "get_digit_int", "9876543210123", "12")
  assert "<get_digit> 1 2 =" in rendered
  assert sample(enc, "sig_int", "98765", "3").split(" <sig> ")[1].startswith("3 =")


def test_positions_by_hand_one_digit():
  enc = encoder()
  tokens, _ = enc.encode("add_int", "12", "345", "357")
  positions = enc.positions("add_int", tokens)
  assert positions["digit_index"].tolist() == [0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3, 0]
  assert positions["significance"].tolist() == [
      0, U + 1, U, 0, U + 2, U + 1, U, 0, U + 2, U + 1, U, 0]
  # [BOS] 1 . 5 2 <add> 2 . 5 = 3 . 7 5 [EOS]: decimals reversed, significance unchanged.
  enc = encoder(reverse="dec")
  tokens, _ = enc.encode("add_float", "1.25", "2.5", "3.75")
  positions = enc.positions("add_float", tokens)
  assert enc.render(tokens) == "[BOS] 1 . 5 2 <add> 2 . 5 = 3 . 5 7 [EOS]"
  assert positions["digit_index"].tolist() == [0, 1, 0, 1, 2, 0, 1, 0, 1, 0, 1, 0, 1, 2, 0]
  assert positions["significance"].tolist() == [
      0, U, 0, U - 2, U - 1, 0, U, 0, U - 1, 0, U, 0, U - 2, U - 1, 0]


def test_positions_by_hand_scientific_unary_with_hints():
  enc = encoder(index_hints=True)
  tokens, _ = enc.encode("to_float_sci", "1.25e12", None, "1250000000000.0")
  positions = enc.positions("to_float_sci", tokens)
  rendered = enc.render(tokens).split()
  assert rendered[:12] == ["[BOS]", "<to_float>", "int:0", "1", ".", "dec:0", "2", "dec:1", "5",
                           "e", "exp:1", "1"]
  digits = [(r, d, s) for r, d, s in zip(rendered, positions["digit_index"],
                                         positions["significance"]) if d]
  assert digits[:6] == [("1", 1, U), ("2", 1, U - 1), ("5", 2, U - 2), ("1", 1, U + 1),
                        ("2", 2, U), ("1", 1, U + 12)]
  hints = [i for i, r in enumerate(rendered) if ":" in r]
  assert not positions["digit_index"][hints].any() and not positions["significance"][hints].any()


def test_positions_by_hand_k_digit_tokens():
  enc = encoder(k=2)
  tokens, _ = enc.encode("add_float", "12345.12345", "1.0", "12346.12345")
  assert operand(enc.render(tokens)) == "1 23 45 . 12 34 5"
  positions = enc.positions("add_float", tokens)
  assert positions["digit_index"][1:8].tolist() == [1, 2, 3, 0, 1, 2, 3]
  # Integer tokens: their lowest digit's power; decimal tokens: their highest digit's power.
  assert positions["significance"][1:8].tolist() == [U + 4, U + 2, U, 0, U - 1, U - 3, U - 5]


@pytest.mark.parametrize("task", ["add_float", "multiply_hard_sci", "truediv_frac", "sig_int"])
def test_digit_index_without_hints_follows_token_by_token(task):
  # What a decoder can track causally: +1 after a number token, 0 at anything else.
  enc = encoder(k=2, reverse="total", pad=True)
  rng = np.random.default_rng(0)
  is_number = [t.isdigit() for t in enc.tokens]
  for _ in range(20):
    a, b = tasks.get(task).sample(rng, int(rng.integers(1, 12)))
    tokens, _ = enc.encode(task, a, b, tasks.get(task).solve(a, b))
    expected, run = [], 0
    for t in tokens:
      run = run + 1 if is_number[t] else 0
      expected.append(run)
    assert enc.positions(task, tokens)["digit_index"].tolist() == expected


@pytest.mark.parametrize("reverse", ["int", "each"])
def test_positions_of_reversed_integer_answers_are_causal(reverse):
  enc = encoder(k=2, reverse=reverse)
  tokens, mask = enc.encode("add_int", "98765", "4321", "103086")
  full = enc.positions("add_int", tokens)
  for end in range(int(np.argmax(mask)), len(tokens) + 1):
    partial = enc.positions("add_int", tokens[:end])
    for key in full:
      np.testing.assert_array_equal(partial[key], full[key][:end])


def test_positions_never_raise_on_junk():
  enc = encoder(k=3, index_hints=True, reverse="total")
  rng = np.random.default_rng(0)
  for _ in range(200):
    junk = rng.integers(-5, enc.vocab_size + 5, size=int(rng.integers(0, 40)))
    positions = enc.positions("add_sci", junk)
    assert positions["digit_index"].shape == positions["significance"].shape == junk.shape


def test_decode_stops_at_eos_and_rejects_what_is_not_an_answer():
  enc = encoder()
  ids = {t: i for i, t in enumerate(enc.tokens)}
  def gen(text):
    return [ids[t] for t in text.split()]
  assert enc.decode_answer("add_float", gen("1 2 . 5 [EOS] 7 . <add> [BOS]")) == "12.5"
  assert enc.decode_answer("add_float", gen("1 2 . 5")) == "12.5"  # ran out of length
  assert enc.decode_answer("add_frac", gen("2 / 4 [EOS]")) == "2/4"  # as written: unreduced
  for bad in ("[EOS]", "1 2 [EOS]", "1 2 . [EOS]", ". 5 [EOS]", "1 . 2 . 3 [EOS]", "1 / 2 [EOS]",
              "1 <add> 2 . 5 [EOS]", "[BOS] 1 . 5", "1 = 1 . 5", "int:0 1 . 5 [EOS]"):
    assert enc.decode_answer("add_float", gen(bad)) == "", bad
  assert enc.decode_answer("add_int", [ids["1"], enc.vocab_size + 3]) == ""


@pytest.mark.parametrize("task", ["add_sci", "truediv_int", "length_float"])
def test_decode_never_raises_and_returns_an_answer_or_nothing(task):
  enc = encoder(k=2, reverse="total", index_hints=True, pad=True, pad_answer=True)
  answer_repr = tasks.get(task).answer_repr
  rng = np.random.default_rng(0)
  for _ in range(500):
    size = int(rng.integers(0, 12))
    junk = rng.choice([enc.eos_id, *range(4, 7), *rng.integers(-3, enc.vocab_size + 3, 3),
                       *range(7, 107)], size=size)
    decoded = enc.decode_answer(task, junk)
    assert decoded == "" or numbers.split_parts(decoded, answer_repr) is not None


def test_decode_undoes_the_format():
  enc = encoder(k=2, reverse="total", index_hints=True, pad=True, pad_answer=True)
  ids = {t: i for i, t in enumerate(enc.tokens)}
  # 21.5 padded to 0021.50, cut 00|21 . 50, all written backwards.
  generated = [ids[t] for t in "dec:0 05 . int:0 12 int:2 00 [EOS]".split()]
  assert enc.decode_answer("add_float", generated) == "21.5"
  generated = [ids[t] for t in "05 . 12 00 [EOS]".split()]  # hints may be left out
  assert enc.decode_answer("add_float", generated) == "21.5"


def test_random_tokenizer_cuts_by_draw_and_decodes_alike():
  enc = Encoder({"name": "random", "max_k": 3})
  task, a, b = "add_int", "12345678901234567890", "98765432109876543210"
  answer = tasks.get(task).solve(a, b)
  cuts = {}
  for seed in range(10):
    tokens, mask = enc.encode(task, a, b, answer, np.random.default_rng(seed))
    again, _ = enc.encode(task, a, b, answer, np.random.default_rng(seed))
    np.testing.assert_array_equal(tokens, again)
    assert enc.decode_answer(task, tokens[np.argmax(mask):]) == answer
    cuts[enc.render(tokens)] = seed
  assert len(cuts) == 10
  # Evaluation prompts (no rng): one fixed cut per question, the same in every encoder.
  prompt, _ = enc.encode(task, a, b, None)
  other, _ = Encoder({"name": "random", "max_k": 3}).encode(task, a, b, None)
  np.testing.assert_array_equal(prompt, other)
  assert len({len(t) for t in enc.render(prompt).split() if t.isdigit()}) > 1


def test_vocabulary_does_not_depend_on_the_format():
  plain = encoder(k=2)
  assert plain.tokens == encoder(k=2, reverse="total", pad=True, index_hints=True).tokens
  assert plain.tokens == Encoder({"name": "random", "max_k": 2}).tokens
  assert plain.tokens[plain.pad_id] == "[PAD]" and plain.tokens[plain.bos_id] == "[BOS]"
  assert plain.tokens[plain.eos_id] == "[EOS]" and plain.tokens[plain.eq_id] == "="
  assert [t for t in plain.tokens if t.startswith("<")] == [f"<{k}>" for k in tasks.kinds()]
  assert plain.vocab_size == len(plain.tokens)


def test_accepts_config_dicts():
  config = ml_collections.ConfigDict({"tokenizer": {"name": "digits", "k": 2},
                                      "format": {"reverse": "int"}})
  enc = Encoder(config.tokenizer, config.format)
  assert sample(enc, "add_int", "123", "4").startswith("[BOS] 32 1 <add>")


@pytest.mark.parametrize("tokenizer,format_options,message", [
    ({"name": "sentencepiece"}, {}, "unknown tokenizer 'sentencepiece'; known: digits, random"),
    ({"name": "digits", "k": 5}, {}, "k=5 is not supported; supported: 1, 2, 3"),
    ({"name": "digits"}, {"reverse": "all"}, "unknown reverse mode 'all'; known: none, int"),
    ({"name": "digits"}, {"hints": True}, "unknown format option(s) 'hints'; known: reverse"),
    ({"name": "digits"}, {"pad_answer": True}, "pad_answer=True needs pad=True"),
])
def test_construction_errors(tokenizer, format_options, message):
  with pytest.raises(ValueError, match=re.escape(message)):
    Encoder(tokenizer, format_options)


def test_input_errors():
  enc = encoder()
  with pytest.raises(ValueError, match="unknown task 'add_integer'"):
    enc.encode("add_integer", "1", "2", "3")
  with pytest.raises(ValueError, match="add_int takes 2 operand"):
    enc.encode("add_int", "1", None, "1")
  with pytest.raises(ValueError, match="operand '1.5' is not a int number"):
    enc.encode("add_int", "1.5", "2", None)
  with pytest.raises(ValueError, match="answer '3/1' is not a int number"):
    enc.encode("add_int", "1", "2", "3/1")
