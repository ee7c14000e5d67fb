"""How far each positional encoding's position inputs reach (`limits`), and the coupled table
covering every significance the text layer gives, so 100-digit numbers are not clipped."""
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nupa_jax import models
from nupa_jax.models import posenc
from nupa_jax.text import MAX_SIGNIFICANCE, Encoder


def make_pe(name, max_len=2048, abstract=True, **options):
  """The PE of a small model; `abstract`: shapes only (limits need no parameters)."""
  config = models.resolve({"num_layers": 1, "hidden": 8, "mlp": 8, "heads": 4, "kv_heads": 4,
                           "dtype": "float32", "max_len": max_len,
                           "posenc": {"name": name, **options}}, vocab_size=10)
  build = lambda: posenc.build(config, rngs=nnx.Rngs(0))
  return nnx.eval_shape(build) if abstract else build()


@pytest.mark.parametrize("name, options, limits", [
    ("abacus", {}, {"digit_index": (128, "max_digits")}),
    ("abacus", {"max_digits": 40, "max_offset": 7}, {"digit_index": (40, "max_digits")}),
    ("coupled", {}, {"significance": (MAX_SIGNIFICANCE, "max_significance")}),
    ("absolute", {"max_len": 64}, {"positions": (63, "max_len")}),
    ("absolute", {"random_positions": 300}, {"positions": (299, "random_positions")}),
    ("rope", {"random_positions": 512}, {"positions": (511, "random_positions")}),
    ("rope", {}, {}),
    ("alibi", {}, {}),
    ("nope", {}, {}),
    ("fire", {}, {}),
])
def test_limits_name_the_largest_input_and_its_option(name, options, limits):
  assert make_pe(name, **options).limits() == limits


def test_check_limits_names_the_option_to_raise():
  pe = make_pe("abacus", max_digits=40)
  posenc.check_limits(pe, {"digit_index": 40, "positions": 10_000}, "a run")
  with pytest.raises(ValueError, match=r"'abacus' represents digit_index up to 40 \(option "
                                       r"max_digits\), but a run reaches 41: set "
                                       r"config.model.posenc.max_digits >= 41"):
    posenc.check_limits(pe, {"digit_index": 41}, "a run")


def test_coupled_default_table_keeps_100_digit_numbers_apart():
  """Every significance of a 100-digit reversed addition reads its own table row (the old
  128-row default clipped all integer digits, 256 and up, to one row)."""
  pe = make_pe("coupled", abstract=False)
  encoder = Encoder(format={"reverse": "int"})
  a = b = "9" * 100
  full, _ = encoder.encode("add_int", a, b, str(int(a) + int(b)))  # a 101-digit answer
  significance = encoder.positions("add_int", full)["significance"]
  assert set(significance[significance > 0]) == set(range(256, 357))  # 10^0 .. 10^100
  features = posenc.Features(jnp.arange(len(full))[None], jnp.ones((1, len(full)), jnp.int32),
                             significance=jnp.asarray(significance)[None])
  out = np.asarray(pe.embed(jnp.zeros((1, len(full), 8)), features))[0]
  np.testing.assert_array_equal(out, np.asarray(pe.table[...])[significance])
  assert len({tuple(row) for row in out[significance > 0]}) == 101
