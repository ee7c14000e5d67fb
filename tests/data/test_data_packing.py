"""Packing: rows hold whole samples, and every field agrees with the unpacked encoding."""
import numpy as np
import pytest

import data_testing
from nupa_jax import tasks
from nupa_jax.data import packing
from nupa_jax.data import settings
from nupa_jax.data import source as source_lib
from nupa_jax.text import Encoder

ENCODER = Encoder(format={"reverse": "int", "index_hints": True})


def example(task: str, length: int, rng) -> source_lib.Example:
  spec = tasks.get(task)
  a, b = spec.sample(rng, length)
  answer = spec.solve(a, b)
  tokens, mask = ENCODER.encode(task, a, b, answer, rng)
  positions = ENCODER.positions(task, tokens)
  sample = source_lib.Sample(task, length, a, b, answer, 0)
  return source_lib.Example(sample, tokens, mask, positions["digit_index"],
                            positions["significance"])


def synthetic(n_tokens: int) -> source_lib.Example:
  """An example whose only meaningful property is its length."""
  tokens = np.arange(n_tokens, dtype=np.int32) + 10
  zeros = np.zeros(n_tokens, np.int32)
  return source_lib.Example(source_lib.Sample("add_int", 1, "1", "1", "2", 0), tokens,
                            np.ones(n_tokens, bool), zeros, zeros)


def test_segments_reproduce_each_sample_encoding():
  rng = np.random.default_rng(0)
  rows = [[example(t, n, rng) for t, n in row] for row in (
      [("add_int", 3), ("add_float", 5), ("multiply_hard_int", 2)],
      [("max_frac", 4)],
      [],
      [("get_digit_int", 6), ("sig_float", 3)])]
  seq_len = 128
  batch = packing.pack(rows, seq_len, ENCODER.pad_id)
  assert all(batch[name].shape == (4, seq_len) for name in packing.FIELDS)
  for r, row in enumerate(rows):
    segments = data_testing.segments(batch, r)
    assert len(segments) == len(row)
    for segment_id, (segment, ex) in enumerate(zip(segments, row), start=1):
      n = len(ex.tokens)
      assert (segment["segment_ids"] == segment_id).all()
      # The whole sample, in one segment: inputs then the last target rebuild the tokens.
      assert np.concatenate([segment["inputs"], segment["targets"][-1:]]).tolist() == \
          ex.tokens.tolist()
      assert (segment["targets"][:-1] == segment["inputs"][1:]).all()  # shifted by one
      assert segment["positions"].tolist() == list(range(n - 1))
      # Loss only on the targets that are answer tokens or EOS, read from the decoded text.
      answer_start = ex.tokens.tolist().index(ENCODER.eq_id) + 1
      assert segment["loss_mask"].tolist() == [i + 1 >= answer_start for i in range(n - 1)]
      assert ENCODER.decode_answer(ex.sample.task, segment["targets"][segment["loss_mask"]]) \
          == ex.sample.answer
      positions = ENCODER.positions(ex.sample.task, ex.tokens)
      assert (segment["digit_index"] == positions["digit_index"][:-1]).all()
      assert (segment["significance"] == positions["significance"][:-1]).all()
    used = sum(len(ex.tokens) - 1 for ex in row)
    assert (batch["inputs"][r, used:] == ENCODER.pad_id).all()
    assert not batch["loss_mask"][r, used:].any()


def test_loss_on_padding_scores_the_padding_up_to_the_longest_sample_like_the_official_code():
  """The official code feeds [tokens, PAD...] padded to the batch's longest sample and keeps
  the PAD labels: each prediction past EOS (from EOS, then from PAD) sees the whole sample."""
  rng = np.random.default_rng(1)
  rows = [[example("add_int", 5, rng)], [example("add_int", 2, rng)], [example("add_int", 8, rng)]]
  seq_len = 64
  plain = packing.pack(rows, seq_len, ENCODER.pad_id)
  batch = packing.pack(rows, seq_len, ENCODER.pad_id, loss_on_padding=True)
  longest = max(len(row[0].tokens) for row in rows)  # official: inputs padded to this length
  for r, (ex,) in enumerate(rows):
    n = len(ex.tokens)
    official_inputs = ex.tokens.tolist() + [ENCODER.pad_id] * (longest - n)
    official_labels = official_inputs[1:]  # HF shifts: position k predicts input k + 1
    official_loss = [k + 1 >= ex.tokens.tolist().index(ENCODER.eq_id) + 1
                     for k in range(longest - 1)]
    assert batch["inputs"][r, :longest - 1].tolist() == official_inputs[:-1]
    assert batch["targets"][r, :longest - 1].tolist() == official_labels
    assert batch["loss_mask"][r, :longest - 1].tolist() == official_loss
    assert (batch["segment_ids"][r, :longest - 1] == 1).all()  # attends to the sample
    assert batch["positions"][r, :longest - 1].tolist() == list(range(longest - 1))
    assert not batch["loss_mask"][r, longest - 1:].any()
    assert (batch["segment_ids"][r, longest - 1:] == 0).all()
  for name in ("digit_index", "significance"):
    assert (batch[name] == plain[name]).all()


def test_loss_on_padding_needs_one_sample_a_row():
  with pytest.raises(ValueError, match="one sample a row"):
    packing.pack([[synthetic(3), synthetic(3)]], 9, 0, loss_on_padding=True)
  with pytest.raises(ValueError, match="packing='padded'"):
    settings.Settings.from_config(data_testing.config(loss_on_padding=True))
  padded = settings.Settings.from_config(
      data_testing.config(loss_on_padding=True, packing="padded"))
  assert padded.loss_on_padding and padded.samples_per_row == 1


def test_a_row_that_does_not_fit_is_refused():
  with pytest.raises(ValueError, match="fill_row first"):
    packing.pack([[synthetic(6), synthetic(6)]], 9, 0)


@pytest.mark.parametrize("tokens, substitutes, calls, positions", [
    # 4 + 6 + 7 + 1 = 18 > 13: the longest (slot 2) is replaced by 11 positions, is still the
    # longest and is replaced again by 2: 13 fits.
    ([5, 7, 8, 2], {(2, 1): 12, (2, 2): 3}, [(2, 1), (2, 2)], [4, 6, 2, 1]),
    # 8 + 7 + 2 = 17 > 12: slot 0 -> 4 positions (13, still too long), then slot 1 -> 5.
    ([9, 8, 3], {(0, 1): 5, (1, 1): 6}, [(0, 1), (1, 1)], [4, 5, 2]),
    ([3, 4], {}, [], [2, 3]),  # fits as drawn
])
def test_fill_row_replaces_the_longest_sample_until_the_row_fits(tokens, substitutes, calls,
                                                                 positions):
  seen = []

  def replace(slot, attempt):
    seen.append((slot, attempt))
    return synthetic(substitutes[slot, attempt])

  out, replaced = packing.fill_row([synthetic(n) for n in tokens], 13 if len(tokens) == 4
                                   else 12, replace)
  assert seen == calls and replaced == len(calls)
  assert [e.slots for e in out] == positions


def test_fill_row_gives_up_with_the_fix():
  with pytest.raises(ValueError, match="raise config.data.seq_len"):
    packing.fill_row([synthetic(20)], 10, lambda slot, attempt: synthetic(30))
