"""Token embeddings: a plain learned table, or digit-token embeddings built from digits.

With digit embeddings, a number token's vector is the sum of one learned vector per place of
the token (ones, tens, hundreds within the token), each chosen by the digit at that place or by
an "absent" entry where the token is shorter. A 2-digit tokenizer's "45" and a 1-digit
tokenizer's "4", "5" then share what each digit means, and "5", "05" and "005" (a leading
chunk vs inner chunks of a 3-digit tokenizer) stay distinct. Other tokens (special, task,
hint tokens) keep their own rows.

The vocabulary's digits come from the text layer as `digit_token_table: int32[V, k_max]`:
row v holds token v's digits by place (column 0 = the token's last, least significant digit),
-1 where the place is empty; a row of all -1 marks a non-number token.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from nupa_jax.models.layers import param
from nupa_jax.models.presets import ModelConfig

ABSENT = 10  # digit-table row for a place the token does not reach


class Constant(nnx.Variable):
  """Model state that is not trained (optimizers built with wrt=nnx.Param skip it)."""


class Embedding(nnx.Module):
  """A [vocab, embed] table; `attend` reuses it as the output head when embeddings are tied."""

  def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
    self.dtype = config.dtype
    self.table = param(rngs, nnx.initializers.normal(config.init_std),
                       (config.vocab_size, config.hidden), ("vocab", "embed"),
                       config.param_dtype)

  def effective_table(self) -> jax.Array:
    return self.table[...]

  def __call__(self, tokens: jax.Array) -> jax.Array:
    return jnp.take(self.effective_table(), tokens, axis=0).astype(self.dtype)

  def attend(self, x: jax.Array) -> jax.Array:
    """float32 logits x . table^T."""
    table = self.effective_table().astype(self.dtype)
    return jnp.einsum("...e,ve->...v", x.astype(self.dtype), table,
                      preferred_element_type=jnp.float32)


class DigitEmbedding(Embedding):
  """Number tokens embedded as sums of per-place digit vectors; see the module docstring."""

  def __init__(self, config: ModelConfig, digit_token_table: np.ndarray, *, rngs: nnx.Rngs):
    super().__init__(config, rngs=rngs)
    digits = np.asarray(digit_token_table, np.int32)
    if digits.ndim != 2 or digits.shape[0] != config.vocab_size:
      raise ValueError(f"digit_token_table must be int32[vocab_size={config.vocab_size}, k_max],"
                       f" got shape {digits.shape}")
    if digits.min() < -1 or digits.max() > 9:
      raise ValueError("digit_token_table entries must be digits 0-9 or -1 (no digit)")
    places = digits.shape[1]
    self.digits = Constant(jnp.asarray(np.where(digits < 0, ABSENT, digits)))
    self.is_number = Constant(jnp.asarray((digits >= 0).any(axis=1)))
    self.digit_table = param(rngs, nnx.initializers.normal(config.init_std),
                             (places, ABSENT + 1, config.hidden), (None, None, "embed"),
                             config.param_dtype)

  def effective_table(self) -> jax.Array:
    places = jnp.arange(self.digits.shape[1])
    composed = self.digit_table[...][places, self.digits[...]].sum(axis=1)   # [V, E]
    return jnp.where(self.is_number[...][:, None], composed, self.table[...])


def build(config: ModelConfig, digit_token_table: np.ndarray | None, *,
          rngs: nnx.Rngs) -> Embedding:
  """The embedding config.digit_embeddings asks for."""
  if not config.digit_embeddings:
    return Embedding(config, rngs=rngs)
  if digit_token_table is None:
    raise ValueError("digit_embeddings=True needs digit_token_table (int32[vocab, k_max] of "
                     "per-place digits, -1 for none) from the tokenizer")
  return DigitEmbedding(config, digit_token_table, rngs=rngs)
