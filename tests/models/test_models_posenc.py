"""Each positional encoding against values worked out by hand."""
import collections
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nupa_jax import models
from nupa_jax.models import posenc
from nupa_jax.models.posenc import alibi, rope, sampling
import model_testing


def make_pe(name, heads=4, hidden=8, **options):
  config = models.resolve({"num_layers": 1, "hidden": hidden, "mlp": 8, "heads": heads,
                           "kv_heads": heads, "dtype": "float32",
                           "posenc": {"name": name, **options}}, vocab_size=10)
  return posenc.build(config, rngs=nnx.Rngs(0))


def features(positions, segment_ids=None, **extra):
  positions = jnp.asarray(positions, jnp.int32)
  segment_ids = jnp.ones_like(positions) if segment_ids is None else jnp.asarray(segment_ids)
  return posenc.Features(positions, segment_ids,
                         **{k: jnp.asarray(v, jnp.int32) for k, v in extra.items()})


def test_rope_rotates_pairs_i_and_i_plus_half_by_position_times_frequency():
  pe = make_pe("rope", heads=2, theta=100.0)          # head_dim 4: frequencies 1 and 100^-0.5
  cos, sin = pe.rotary(jnp.array([[0, 2]]))
  x = jnp.broadcast_to(jnp.array([1.0, 2.0, 3.0, 4.0]), (1, 2, 1, 4))
  out = np.asarray(posenc.apply_rotary(x, cos, sin))[0, :, 0]
  np.testing.assert_allclose(out[0], [1, 2, 3, 4], atol=1e-6)   # position 0: identity
  a, b = 2.0, 0.2                                                # angles at position 2
  expected = [1 * math.cos(a) - 3 * math.sin(a), 2 * math.cos(b) - 4 * math.sin(b),
              3 * math.cos(a) + 1 * math.sin(a), 4 * math.cos(b) + 2 * math.sin(b)]
  np.testing.assert_allclose(out[1], expected, rtol=1e-5)


def test_rope_scores_depend_only_on_relative_distance():
  pe = make_pe("rope", heads=1, hidden=16, theta=500000.0)
  q, k = jax.random.normal(jax.random.key(0), (2, 1, 1, 1, 16))

  def score(m, n):
    rq = posenc.apply_rotary(q, *pe.rotary(jnp.array([[m]])))
    rk = posenc.apply_rotary(k, *pe.rotary(jnp.array([[n]])))
    return float(jnp.sum(rq * rk))

  assert score(7, 3) == pytest.approx(score(107, 103), rel=1e-4)
  assert score(7, 3) != pytest.approx(score(7, 5), rel=1e-3)


def test_llama3_rope_scaling_keeps_fast_slows_slow_and_interpolates_between():
  scaling = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
             "original_max_position_embeddings": 8192}
  plain = rope.inverse_frequencies(128, 500000.0)
  scaled = rope.inverse_frequencies(128, 500000.0, scaling)
  wavelength = 2 * math.pi / plain.astype(np.float64)
  fast, slow = wavelength < 8192 / 4, wavelength > 8192 / 1
  np.testing.assert_allclose(scaled[fast], plain[fast])
  np.testing.assert_allclose(scaled[slow], plain[slow] / 8, rtol=1e-6)
  medium = ~fast & ~slow
  assert medium.any()
  smooth = (8192 / wavelength[medium] - 1) / (4 - 1)
  np.testing.assert_allclose(scaled[medium],
                             (1 - smooth) * plain[medium] / 8 + smooth * plain[medium], rtol=1e-6)


def test_linear_rope_scaling_slows_every_frequency_and_unknown_types_are_refused():
  plain = rope.inverse_frequencies(64, 10000.0)
  np.testing.assert_allclose(
      rope.inverse_frequencies(64, 10000.0, {"rope_type": "linear", "factor": 4.0}), plain / 4,
      rtol=1e-6)
  with pytest.raises(ValueError, match="unknown RoPE scaling 'yarn'; known: llama3, linear"):
    make_pe("rope", scaling={"rope_type": "yarn", "factor": 4.0})
  with pytest.raises(ValueError, match="RoPE scaling 'linear': .*low_freq_factor"):
    make_pe("rope", scaling={"rope_type": "linear", "factor": 4.0, "low_freq_factor": 1.0})


def test_alibi_slopes_follow_the_paper_for_power_of_two_and_other_head_counts():
  np.testing.assert_allclose(alibi.slopes(8), [2.0 ** -i for i in range(1, 9)])
  np.testing.assert_allclose(alibi.slopes(6), [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3])


def test_alibi_reward_distance_takes_the_official_codes_slopes_for_any_head_count():
  """2^(-8 (h + 1) / n), as the official code's `_alibi_pe`: the published slopes for 8 heads,
  others for 6 (the 3b preset has 24)."""
  pos = jnp.array([[0, 1]])
  for heads in (6, 8, 24):
    bias = np.asarray(make_pe("alibi", heads=heads, hidden=heads * 2, reward_distance=True)
                      .attention_bias(pos, pos))[0, :, 1, 0]
    np.testing.assert_allclose(bias, [2.0 ** (-8 * (h + 1) / heads) for h in range(heads)],
                               rtol=1e-6)
  np.testing.assert_allclose(alibi.official_slopes(8), alibi.slopes(8))


def test_alibi_bias_is_a_negative_distance_penalty_per_head():
  pe = make_pe("alibi", heads=4)
  pos = jnp.array([[0, 1, 2]])
  bias = np.asarray(pe.attention_bias(pos, pos))
  assert bias.shape == (1, 4, 3, 3)
  distance = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]])
  for h, slope in enumerate([1 / 4, 1 / 16, 1 / 64, 1 / 256]):
    np.testing.assert_allclose(bias[0, h], -slope * distance)


def test_alibi_reward_distance_is_the_official_nupa_codes_positive_bias():
  pe = make_pe("alibi", heads=2, reward_distance=True)
  pos = jnp.array([[0, 1, 2, 3]])
  bias = np.asarray(pe.attention_bias(pos, pos))
  assert bias[0, 0, 3, 0] == pytest.approx(3 * 2.0 ** -4)   # +slope * distance, head 0
  assert bias[0, 1, 2, 1] == pytest.approx(1 * 2.0 ** -8)
  np.testing.assert_allclose(bias, -np.asarray(make_pe("alibi", heads=2).attention_bias(pos, pos)))


def test_fire_normalises_log_distance_by_the_query_position_or_threshold():
  pe = make_pe("fire", heads=2, init_c=0.1, init_threshold=512.0)
  q, k = jnp.array([[3, 1000]]), jnp.array([[1, 400]])
  x = np.asarray(pe.normalized_distance(q, k))[0]
  assert x[0, 0] == pytest.approx(math.log(1 + 0.1 * 2) / math.log(1 + 0.1 * 512), rel=1e-4)
  assert x[1, 1] == pytest.approx(math.log(1 + 0.1 * 600) / math.log(1 + 0.1 * 1000), rel=1e-4)
  assert x[0, 1] == 0.0   # a later key (masked anyway) counts as distance 0


def test_fire_bias_shape_and_monotone_initialisation():
  pe = make_pe("fire", heads=4)
  pos = jnp.array([[0, 1, 2, 3, 4, 5, 6, 7], [0, 1, 2, 0, 1, 2, 3, 4]])   # row 2 is packed
  bias = np.asarray(jax.jit(pe.attention_bias)(pos, pos))
  assert bias.shape == (2, 4, 8, 8)
  for i in range(8):
    nearest_first = bias[0, :, i, :i + 1][:, ::-1]
    assert (np.diff(nearest_first, axis=-1) <= 1e-7).all()
  assert (bias[0, :, 7, 0] < bias[0, :, 7, 7]).all()
  # The bias depends on positions, not slots: query position 4 vs key position 0.
  np.testing.assert_allclose(bias[1, :, 7, 3], bias[0, :, 4, 0])


def fire_reference(pe, q_pos, k_pos):
  """FIRE's bias from its formula, in float64 numpy: f_h(psi(i - j) / psi(max(L, i)))."""
  softplus = lambda v: math.log1p(math.exp(float(v)))
  c, threshold = softplus(pe.c[...]), softplus(pe.threshold[...])
  w1, b1 = np.asarray(pe.w1[...], np.float64), np.asarray(pe.b1[...], np.float64)
  w2, b2 = np.asarray(pe.w2[...], np.float64), np.asarray(pe.b2[...], np.float64)
  q = np.asarray(q_pos, np.float64)[:, :, None]
  k = np.asarray(k_pos, np.float64)[:, None, :]
  x = np.log1p(c * np.maximum(q - k, 0)) / np.log1p(c * np.maximum(threshold, q))
  hidden = np.maximum(x[..., None] * w1 + b1, 0.0)                 # [B, Tq, Tk, h]
  return np.moveaxis(hidden @ w2 + b2, -1, 1)                      # [B, N, Tq, Tk]


@pytest.mark.parametrize("random_positions", [None, 64])
def test_fire_bias_gathered_from_its_table_matches_the_formula(random_positions):
  options = {"random_positions": random_positions} if random_positions else {}
  pe = make_pe("fire", heads=2, init_threshold=4.0, **options)
  # A packed row, a decode step against a 12-slot cache, and (with the option) positions
  # drawn past the key length, as random_positions training draws them.
  packed = jnp.array([[0, 1, 2, 3, 4, 0, 1, 2, 0, 1, 2, 3]])
  cases = [(packed, packed), (jnp.array([[7]]), jnp.arange(12)[None])]
  if random_positions:
    far = jnp.array([[3, 17, 40, 63]])
    cases.append((far, far))
  for q, k in cases:
    got = np.asarray(jax.jit(pe.attention_bias)(q, k))
    np.testing.assert_allclose(got, fire_reference(pe, q, k), rtol=1e-5, atol=1e-6)


def test_fire_parameter_gradients_through_the_table_match_the_direct_formula():
  pe = make_pe("fire", heads=2, init_threshold=4.0)
  pos = jnp.array([[0, 1, 2, 3, 0, 1], [0, 1, 2, 3, 4, 5]])
  weights = jax.random.normal(jax.random.key(0), (2, 2, 6, 6))

  def direct(module):  # the per-sample MLP the table replaces
    x = module.normalized_distance(pos, pos)[..., None]
    hidden = jax.nn.relu(x * module.w1[...] + module.b1[...])
    return jnp.moveaxis(hidden @ module.w2[...] + module.b2[...], -1, 1)

  loss = lambda f: lambda module: jnp.sum(f(module) * weights)
  # Jitted: one compile each instead of one per operation.
  via_table = nnx.jit(nnx.grad(loss(lambda m: m.attention_bias(pos, pos))))(pe)
  via_formula = nnx.jit(nnx.grad(loss(direct)))(pe)
  for a, b in zip(jax.tree.leaves(via_table), jax.tree.leaves(via_formula)):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_fire_position_past_its_table_gives_nan_not_a_wrong_bias():
  pe = make_pe("fire", heads=2)
  # The table is 2 x 2 (the key length): query 9, and key 3 (whose flattened index would land
  # on a valid entry of another query), are both past it.
  bias = np.asarray(pe.attention_bias(jnp.array([[0, 9, 1]]), jnp.array([[0, 3]])))
  assert np.isnan(bias[0, :, 1]).all() and np.isnan(bias[0, :, :, 1]).all()
  assert np.isfinite(bias[0, :, [0, 2], 0]).all()


def test_abacus_embeds_digit_indices_of_a_packed_row_with_offsets_per_sample():
  pe = make_pe("abacus", hidden=8, max_digits=16, max_offset=100)
  # "12+345=357" and "9+9=18" packed in one row, then padding.
  digit_index = [1, 2, 0, 1, 2, 3, 0, 1, 2, 3, 1, 0, 1, 0, 1, 2, 0, 0]
  segments = [1] * 10 + [2] * 6 + [0] * 2
  feats = features(np.arange(18), [segments], digit_index=[digit_index])
  table = np.asarray(pe.table[...])
  out = np.asarray(pe.embed(jnp.zeros((1, 18, 8)), feats))[0]
  np.testing.assert_allclose(out, table[digit_index])

  index = np.asarray(digit_index)
  seen_offsets = set()
  for seed in range(4):
    trained = np.asarray(pe.prepare(feats, rng=jax.random.key(seed),
                                    deterministic=False).digit_index)[0]
    assert (trained[index == 0] == 0).all()
    offsets = []
    for s in (1, 2):
      shift = (trained - index)[(index > 0) & (np.asarray(segments) == s)]
      assert len(set(shift)) == 1 and 0 <= shift[0] <= 100
      offsets.append(int(shift[0]))
    seen_offsets.add(tuple(offsets))
  assert len(seen_offsets) > 1
  evaluated = pe.prepare(feats, rng=jax.random.key(0), deterministic=True)
  np.testing.assert_array_equal(evaluated.digit_index[0], index)


def test_coupled_embeds_significance_with_one_offset_per_sample():
  pe = make_pe("coupled", hidden=8, max_significance=20, max_offset=30)
  significance = [1, 0, 5, 1, 0, 5, 2, 1, 0, 5, 0, 5]
  segments = [1] * 6 + [2] * 6
  feats = features(np.arange(12), [segments], significance=[significance])
  out = np.asarray(pe.embed(jnp.zeros((1, 12, 8)), feats))[0]
  np.testing.assert_allclose(out, np.asarray(pe.table[...])[significance])
  trained = np.asarray(pe.prepare(feats, rng=jax.random.key(1),
                                  deterministic=False).significance)[0]
  shift = trained - np.asarray(significance)
  assert len(set(shift[:6])) == 1 and len(set(shift[6:])) == 1


def test_random_positions_are_sorted_distinct_subsets_spread_over_the_range():
  rows = 400
  segments = jnp.array([[1] * 5 + [2] * 3 + [3] * 4 + [0] * 2] * rows)
  positions = jnp.array([[0, 1, 2, 3, 4, 0, 1, 2, 0, 1, 2, 3, 0, 1]] * rows)
  drawn = np.asarray(jax.jit(sampling.random_positions, static_argnums=3)(
      jax.random.key(0), positions, segments, 1000))
  assert drawn.min() >= 0 and drawn.max() < 1000
  for s in (1, 2, 3):
    assert (np.diff(drawn[:, np.asarray(segments[0]) == s], axis=1) > 0).all()
  assert len({tuple(row) for row in drawn}) == rows
  # A uniform sorted 4-subset of [0, 1000) has E[min] ~ 200 and E[max] ~ 800.
  last = drawn[:, 8:12]
  assert 150 < last[:, 0].mean() < 250 and 750 < last[:, 3].mean() < 850


def test_random_positions_are_uniform_over_subsets_as_the_official_draw():
  """Every 2-subset of [0, 6) equally likely, as `sorted(choice(6, 2, replace=False))` gives
  them: adjacent pairs included, which sorted draws with replacement make half as likely. Two
  segments of one row draw independently."""
  rows = 3000
  segments = jnp.array([[1, 1, 2, 2, 0]] * rows)
  positions = jnp.array([[0, 1, 0, 1, 0]] * rows)
  drawn = np.asarray(jax.jit(sampling.random_positions, static_argnums=3)(
      jax.random.key(0), positions, segments, 6))
  pairs = [tuple(p) for p in drawn[:, :2]] + [tuple(p) for p in drawn[:, 2:4]]
  counts = collections.Counter(pairs)
  assert set(counts) == set(itertools.combinations(range(6), 2))
  expected = len(pairs) / 15  # 400 each; a binomial's sd is ~19
  assert all(abs(c - expected) < 80 for c in counts.values()), counts
  adjacent = sum(counts[(i, i + 1)] for i in range(5)) / len(pairs)
  assert adjacent == pytest.approx(5 / 15, abs=0.03)
  same = np.mean([tuple(a) == tuple(b) for a, b in zip(drawn[:, :2], drawn[:, 2:4])])
  assert same == pytest.approx(1 / 15, abs=0.02)


@pytest.mark.parametrize("name", ["rope", "fire", "absolute"])
def test_random_positions_only_at_training_time(name):
  pe = make_pe(name, random_positions=256)
  feats = features([[0, 1, 2, 3]])
  assert pe.prepare(feats, rng=None, deterministic=True) is feats
  trained = jax.jit(lambda f, k: pe.prepare(f, rng=k, deterministic=False).positions)(
      feats, jax.random.key(0))
  assert (np.diff(np.asarray(trained)[0]) > 0).all() and not np.array_equal(trained, feats.positions)


def _first_layer_only(model, config):
  """The model cut to its first layer (reuses the tiny preset's compiled initialisers)."""
  graphdef, _ = nnx.split(nnx.eval_shape(lambda: model_testing.build({**config,
                                                                      "num_layers": 1})))
  state = nnx.state(model)
  state["layers"] = jax.tree.map(lambda x: x[:1], state["layers"])
  return nnx.merge(graphdef, state)


def test_nope_carries_no_position_signal():
  # One layer, NoPE: the last token attends to the earlier ones as a set, so permuting them
  # (or spreading their positions) leaves its logits unchanged; with RoPE it does not.
  tokens = jnp.array([[3, 5, 7, 11, 13, 2]])
  permuted = jnp.array([[13, 7, 3, 11, 5, 2]])
  spread = jnp.array([[0, 2, 4, 6, 8, 10]])
  for name, invariant in (("nope", True), ("rope", False)):
    config = model_testing.tiny(name)
    model = _first_layer_only(model_testing.build(config), config)
    base = model_testing.forward(model, tokens)[0, -1]
    for other in (model_testing.forward(model, permuted)[0, -1],
                  model_testing.forward(model, tokens, positions=spread)[0, -1]):
      assert np.allclose(base, other, atol=1e-5) == invariant, name


def test_registry_names_the_known_encodings_and_options():
  assert posenc.names() == ["abacus", "absolute", "alibi", "coupled", "fire", "nope", "rope"]
  with pytest.raises(ValueError, match="unknown positional encoding 'rpoe'; known: abacus, "
                                       "absolute, alibi, coupled, fire, nope, rope"):
    make_pe("rpoe")
  with pytest.raises(ValueError, match="no options \\['thetaa'\\].*theta"):
    make_pe("rope", thetaa=1.0)
