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
  """Randomized positions (Ruoss et al. 2023): each segment's positions become a uniformly
  random subset of [0, max_position) of the same size, sorted, keeping their order (the
  official NUPA code's `random_position`: a sorted draw without replacement).

  A sorted n-subset x_0 < ... < x_{n-1} of [0, M) is its gaps, x_0 and x_{p+1} - x_p - 1 and
  M - 1 - x_{n-1}: n + 1 counts summing to K = M - n, and the subset is uniform exactly when
  the gaps are uniform over such compositions. That is the Dirichlet-multinomial with all
  weights 1: n + 1 exponentials normalised give cut points C_1 <= ... <= C_n of [0, 1), and K
  uniform draws fall between them, so x_p = p + #{draws below C_{p+1}}. No sort is needed, so
  it stays cheap on packed rows. (Rounding C_{p+1} x (K + 1) down instead, as sorted draws
  with replacement do, makes adjacent positions about half as likely as they should be.)
  It draws rows x (T + 1) x max_position uniforms a step, a segment's worth for every
  possible segment of a row. Segments longer than max_position are clipped. Assumes each
  segment is contiguous with positions increasing by one (as packing produces).
  """
  b, t = positions.shape
  k_gaps, k_last, k_draws = jax.random.split(rng, 3)
  gaps = jax.random.exponential(k_gaps, (b, t))
  last_gap = jax.random.exponential(k_last, (b, t + 1))
  draws = jax.random.uniform(k_draws, (b, t + 1, max_position))  # K <= M of them a segment
  seg = segment_ids.astype(jnp.int32)

  def row(gaps, last_gap, draws, seg, pos):
    n_seg = t + 1
    total = jax.ops.segment_sum(gaps, seg, n_seg) + last_gap           # S_{n+1}
    length = jax.ops.segment_max(pos, seg, n_seg) + 1                  # n
    csum = jnp.cumsum(gaps)
    start = jax.ops.segment_min(csum - gaps, seg, n_seg)
    cut = (csum - start[seg]) / total[seg]                             # C_{p+1} = S_{p+1} / S_{n+1}
    room = jnp.maximum(max_position - length[seg], 0)                  # K
    counted = jnp.arange(max_position) < room[:, None]
    below = jnp.sum((draws[seg] < cut[:, None]) & counted, axis=1, dtype=jnp.int32)
    return jnp.minimum(below + pos, max_position - 1)

  return jax.vmap(row)(gaps, last_gap, draws, seg, positions.astype(jnp.int32))


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
