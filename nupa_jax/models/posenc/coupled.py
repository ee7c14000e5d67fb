"""Position coupling (Cho et al. 2024): digits of equal significance share a position id.

The ids are the text layer's `significance` (`Encoder.positions`: the power of ten a token
carries, equal for aligned digits of operands and answer), fed to a learned absolute
embedding. At training time each sample's ids are shifted by one random offset in
[0, max_offset] (the paper's random starting id), so rows for long numbers get trained.
"""
from __future__ import annotations

from flax import nnx

from nupa_jax.models.posenc import base, indexed
from nupa_jax.models.presets import ModelConfig


@base.register("coupled")
class Coupled(indexed.IndexedEmbedding):
  """x + table[significance (+ offset)]."""
  feature = "significance"

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs, max_significance: int = 128,
               max_offset: int = 64):
    super().__init__(config, rngs=rngs, max_index=max_significance, max_offset=max_offset)
