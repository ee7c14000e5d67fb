"""Position coupling (Cho et al. 2024): digits of equal significance share a position id.

The ids are the text layer's `significance` (`Encoder.positions`: the power of ten a token
carries, equal for aligned digits of operands and answer), fed to a learned absolute
embedding. At training time each sample's ids are shifted by one random offset in
[0, max_offset] (the paper's random starting id), so rows for long numbers get trained.

The table covers every id the text layer gives (`max_significance` defaults to its
MAX_SIGNIFICANCE = 511: the units digit is 256, so integer parts of up to 256 digits and up to
255 decimals); a smaller table would clip the ids of long numbers to its last row.
"""
from __future__ import annotations

from flax import nnx

from nupa_jax.models.posenc import base, indexed
from nupa_jax.models.presets import ModelConfig
from nupa_jax.text import positions as text_positions


@base.register("coupled")
class Coupled(indexed.IndexedEmbedding):
  """x + table[significance (+ offset)]."""
  feature = "significance"
  limit_option = "max_significance"

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs,
               max_significance: int = text_positions.MAX_SIGNIFICANCE, max_offset: int = 64):
    super().__init__(config, rngs=rngs, max_index=max_significance, max_offset=max_offset)
