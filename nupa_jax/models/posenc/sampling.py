"""Training-time randomisation of position inputs, per packed sample (segment).

Packed rows hold many samples, so every draw is per (row, segment): a sample sees the same
random offset on all its tokens, and its neighbours in the row see independent ones.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from nupa_jax.models.posenc import base


def segment_offsets(rng: jax.Array, segment_ids: jax.Array, max_offset: int) -> jax.Array:
  """int32[B, T]: one offset uniform in [0, max_offset] per segment, broadcast to its tokens."""
  b, t = segment_ids.shape
  draws = jax.random.randint(rng, (b, t + 1), 0, max_offset + 1, dtype=jnp.int32)
  return jnp.take_along_axis(draws, segment_ids.astype(jnp.int32), axis=1)


def random_positions(rng: jax.Array, positions: jax.Array, segment_ids: jax.Array,
                     max_position: int) -> jax.Array:
  """Randomized positions (Ruoss et al. 2023): each segment's positions become a sorted random
  subset of [0, max_position) of the same size, keeping their order.

  Positions 0..n-1 of a segment map to y_p + p, where y_0 <= ... <= y_{n-1} are n sorted
  uniform draws from [0, max_position - n] (uniform order statistics from normalised cumulative
  sums of exponentials); adding p makes them strictly increasing. This needs no per-segment
  sort, so it stays cheap on packed rows. Segments longer than max_position are clipped.
  Assumes each segment is contiguous with positions increasing by one (as packing produces).
  """
  b, t = positions.shape
  k_gaps, k_last = jax.random.split(rng)
  gaps = jax.random.exponential(k_gaps, (b, t))
  last_gap = jax.random.exponential(k_last, (b, t + 1))
  seg = segment_ids.astype(jnp.int32)

  def row(gaps, last_gap, seg, pos):
    n_seg = t + 1
    total = jax.ops.segment_sum(gaps, seg, n_seg) + last_gap           # S_{n+1}
    length = jax.ops.segment_max(pos, seg, n_seg) + 1                  # n
    csum = jnp.cumsum(gaps)
    start = jax.ops.segment_min(csum - gaps, seg, n_seg)
    frac = (csum - start[seg]) / total[seg]                            # S_{p+1} / S_{n+1}
    room = jnp.maximum(max_position - length[seg], 0)
    y = jnp.minimum(jnp.floor(frac * (room + 1)).astype(jnp.int32), room)
    return jnp.minimum(y + pos, max_position - 1)

  return jax.vmap(row)(gaps, last_gap, seg, positions.astype(jnp.int32))


class RandomizedPositions:
  """Mixin for a PE with a `random_positions` option (None = off): at training time positions
  are replaced by `random_positions(...)` over [0, random_positions)."""
  random_positions: int | None

  @property
  def needs_rng(self) -> bool:
    return bool(self.random_positions)

  def prepare(self, features: base.Features, *, rng: jax.Array | None,
              deterministic: bool) -> base.Features:
    if deterministic or not self.random_positions:
      return features
    return features._replace(positions=random_positions(
        rng, features.positions, features.segment_ids, self.random_positions))

  def limits(self) -> dict[str, tuple[int, str]]:
    """Training draws positions below `random_positions`: evaluation must stay below too."""
    return {"positions": (self.random_positions - 1, "random_positions")} if (
        self.random_positions) else {}
