"""Shared helpers of the data tests: small configs and an independent reading of batches."""
import re

import ml_collections
import numpy as np

from nupa_jax import data


def config(**overrides) -> ml_collections.ConfigDict:
  """A small data config: add_int 1-8, 32 samples a batch, 8 per row, fixed seq_len (no
  probe), plus `overrides` of config.data fields (and `seed`, the run's seed)."""
  c = ml_collections.ConfigDict()
  c.seed = overrides.pop("seed", 0)
  c.train = ml_collections.ConfigDict({"batch_size": 32})
  c.data = data.defaults()
  c.data.samples_per_row = 8
  c.data.seq_len = 256
  for key, value in overrides.items():
    c.data[key] = value
  return c


def segments(batch: dict, row: int) -> list[dict[str, np.ndarray]]:
  """The segments of one row, found by scanning for runs of equal nonzero segment ids, with
  padding checked to be a tail of zeros."""
  ids = np.asarray(batch["segment_ids"][row])
  out, start = [], 0
  while start < len(ids) and ids[start] != 0:
    end = start
    while end < len(ids) and ids[end] == ids[start]:
      end += 1
    out.append({name: np.asarray(batch[name][row])[start:end]
                for name in ("inputs", "targets", "loss_mask", "positions", "digit_index",
                             "significance", "segment_ids")})
    start = end
  assert not ids[start:].any(), "padding must be a tail of segment id 0"
  return out


def addition(encoder, segment: dict) -> tuple[int, int, int]:
  """(a, b, answer) of an add_int segment, read from its rendered tokens."""
  tokens = list(segment["inputs"]) + [segment["targets"][-1]]
  text = encoder.render(tokens).replace(" ", "")
  match = re.fullmatch(r"\[BOS\](\d+)<add>(\d+)=(\d+)\[EOS\]", text)
  assert match, text
  return tuple(int(g) for g in match.groups())
