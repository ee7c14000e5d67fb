"""KV-cache decoding against full forward passes, sampling, and the errors that name the fix."""
import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from nupa_jax import models
from nupa_jax.evaluation import generate as gen

VOCAB, PAD, NEW = 24, 0, 6
NUMBER_TOKENS = np.arange(VOCAB) >= 14          # pretend ids 14..23 are digit tokens
LENGTHS = np.array([5, 2, 7], np.int32)


def _prompts():
  """Right-padded prompts whose padding holds junk (it must be ignored)."""
  return np.random.default_rng(3).integers(1, VOCAB, (3, 7)).astype(np.int32)


@functools.cache
def _model(pe: str):
  return models.build({"preset": "tiny", "posenc": {"name": pe}}, VOCAB, rngs=nnx.Rngs(0))


@functools.partial(jax.jit, static_argnums=0,
                   compiler_options={"xla_backend_optimization_level": 0})  # compiles faster
def _forward(graphdef, state, tokens, features):
  return nnx.merge(graphdef, state)(tokens, **features)


def _digit_index(row):
  """The DigitRuns rule applied to a whole sequence."""
  out, previous = [], 0
  for token in row:
    previous = previous + 1 if NUMBER_TOKENS[token] else 0
    out.append(previous)
  return out


def _reference(model, prompts, lengths, eos_id, with_digits=False,
               significance_is_position=False, position_ids=None):
  """Greedy decoding by re-running the full sequence (no cache) for every new token; token j
  of row i at position position_ids[i, j] when given, else j."""
  graphdef, state = nnx.split(model)
  width = prompts.shape[1] + NEW
  seqs = [list(p[:n]) for p, n in zip(prompts, lengths)]
  done = [False] * len(seqs)
  out = np.full((len(seqs), NEW), PAD, np.int32)
  for step in range(NEW):
    tokens = np.zeros((len(seqs), width), np.int32)
    segments = np.zeros_like(tokens)
    for i, s in enumerate(seqs):
      tokens[i, :len(s)], segments[i, :len(s)] = s, 1
    features = {"segment_ids": segments}
    if position_ids is not None:
      features["positions"] = np.asarray(position_ids)[:, :width]
    if with_digits:
      features["digit_index"] = np.array([_digit_index(r) for r in tokens], np.int32)
    if significance_is_position:
      features["significance"] = np.tile(np.arange(width, dtype=np.int32), (len(seqs), 1))
    logits = np.asarray(_forward(graphdef, state, tokens, features))
    for i, s in enumerate(seqs):
      if done[i]:
        continue
      token = int(np.argmax(logits[i, len(s) - 1]))
      out[i, step], done[i] = token, token == eos_id
      s.append(token)
  return out


@pytest.mark.parametrize("pe", ["rope", "nope", "alibi", "absolute"])
def test_cached_greedy_decoding_equals_argmax_of_full_forward_passes(pe):
  model, prompts = _model(pe), _prompts()
  free = _reference(model, prompts, LENGTHS, eos_id=-1)
  eos = int(free[0, 2])                          # row 0 stops at its third token
  expected = _reference(model, prompts, LENGTHS, eos_id=eos)
  assert (expected[0, 3:] == PAD).all()
  got = gen.generate(model, prompts, LENGTHS, max_new_tokens=NEW, eos_id=eos, pad_id=PAD)
  np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("pe", ["alibi", "absolute"])
def test_decoding_at_given_position_ids_equals_full_forward_passes_at_them(pe):
  """Spread-out ids (as a PE trained on random positions sees them) reach the prompt and every
  generated token, and the cache keeps them for the keys' biases: the cache's decoding equals
  re-running the sequence at those ids. (A random tiny RoPE model hardly reads positions, so
  it could not tell ids from none; ALiBi's bias and the absolute table do.)"""
  model, prompts = _model(pe), _prompts()
  buffer = gen.power_of_two(NEW)
  width = prompts.shape[1] + buffer
  rng = np.random.default_rng(5)
  ids = np.stack([np.sort(rng.choice(64, width, replace=False)) for _ in LENGTHS]).astype(np.int32)
  assert (np.diff(ids, axis=1) > 1).any()  # not consecutive: the test would not see them ignored
  expected = _reference(model, prompts, LENGTHS, eos_id=-1, position_ids=ids)
  got = gen.generate(model, prompts, LENGTHS, max_new_tokens=NEW, eos_id=-1, pad_id=PAD,
                     position_ids=ids)
  np.testing.assert_array_equal(got, expected)
  default = gen.generate(model, prompts, LENGTHS, max_new_tokens=NEW, eos_id=-1, pad_id=PAD)
  assert (np.asarray(got) != np.asarray(default)).sum() >= NEW  # the ids change the answers
  consecutive = np.tile(np.arange(width, dtype=np.int32), (len(LENGTHS), 1))
  np.testing.assert_array_equal(  # ids 0, 1, 2, ... given are the default
      gen.generate(model, prompts, LENGTHS, max_new_tokens=NEW, eos_id=-1, pad_id=PAD,
                   position_ids=consecutive), default)
  with pytest.raises(ValueError, match=r"position_ids must have one id per prompt and output "
                     r"slot, shape \(3, 15\), got \(3, 7\)"):
    gen.generate(model, prompts, LENGTHS, max_new_tokens=NEW, eos_id=-1, pad_id=PAD,
                 position_ids=ids[:, :7])


def test_abacus_decoding_continues_digit_indices_with_digit_runs():
  model, prompts = _model("abacus"), _prompts()
  expected = _reference(model, prompts, LENGTHS, eos_id=-1, with_digits=True)
  features = {"digit_index": np.array([_digit_index(r) for r in prompts], np.int32)}
  rule = gen.DigitRuns(tuple(bool(x) for x in NUMBER_TOKENS))
  got = gen.generate(model, prompts, LENGTHS, max_new_tokens=NEW, eos_id=-1, pad_id=PAD,
                     features=features, next_features=rule)
  np.testing.assert_array_equal(got, expected)
  table = np.full((VOCAB, 1), -1)
  table[NUMBER_TOKENS, 0] = 1
  assert gen.DigitRuns.from_table(table) == rule


@dataclasses.dataclass(frozen=True)
class CountUp:
  """A toy next_features rule: each generated token's significance is the previous + 1."""

  def __call__(self, previous, token):
    return {"significance": previous["significance"] + 1}


@pytest.mark.slow
def test_fire_and_coupled_decoding_equal_full_forward_passes():
  prompts = _prompts()
  expected = _reference(_model("fire"), prompts, LENGTHS, eos_id=-1)
  got = gen.generate(_model("fire"), prompts, LENGTHS, max_new_tokens=NEW, eos_id=-1,
                     pad_id=PAD)
  np.testing.assert_array_equal(got, expected)
  significance = np.tile(np.arange(prompts.shape[1], dtype=np.int32), (3, 1))
  got = gen.generate(_model("coupled"), prompts, LENGTHS, max_new_tokens=NEW, eos_id=-1,
                     pad_id=PAD, features={"significance": significance},
                     next_features=CountUp())
  # Significance counting up from 0 is each token's position in its own sequence.
  expected = _reference(_model("coupled"), prompts, LENGTHS, eos_id=-1,
                        significance_is_position=True)
  np.testing.assert_array_equal(got, expected)


def test_sampling_is_reproducible_and_tiny_top_p_is_greedy():
  model, prompts = _model("rope"), _prompts()
  run = functools.partial(gen.generate, model, prompts, LENGTHS, max_new_tokens=NEW,
                          eos_id=-1, pad_id=PAD)
  nucleus = run(rng=jax.random.key(0), temperature=1.0, top_p=1e-6)
  np.testing.assert_array_equal(nucleus, run())
  hot = functools.partial(run, temperature=3.0)
  np.testing.assert_array_equal(hot(rng=jax.random.key(5)), hot(rng=jax.random.key(5)))
  assert len({np.asarray(hot(rng=jax.random.key(k))).tobytes() for k in range(3)}) > 1


def test_top_p_samples_only_from_the_nucleus():
  logits = jnp.log(jnp.array([[0.5, 0.3, 0.15, 0.05]]))
  keys = jax.random.split(jax.random.key(0), 4000)
  draw = jax.jit(jax.vmap(lambda k: gen.sample_token(logits, k, 1.0, 0.7)[0]))
  counts = np.bincount(np.asarray(draw(keys)), minlength=4)
  assert counts[2] == counts[3] == 0                     # 0.5 + 0.3 reaches 0.7
  assert counts[0] / counts.sum() == pytest.approx(0.5 / 0.8, abs=0.03)
  hot = jax.jit(jax.vmap(lambda k: gen.sample_token(logits, k, 2.0, 1.0)[0]))
  assert (np.bincount(np.asarray(hot(keys)), minlength=4) > 0).all()


def test_unsupported_combinations_are_reported():
  prompts = _prompts()
  with pytest.raises(ValueError, match="needs rng="):
    gen.generate(_model("rope"), prompts, LENGTHS, max_new_tokens=2, eos_id=1, pad_id=PAD,
                 temperature=0.6)
  with pytest.raises(ValueError, match="pass next_features="):
    gen.generate(_model("rope"), prompts, LENGTHS, max_new_tokens=2, eos_id=1, pad_id=PAD,
                 features={"digit_index": np.zeros_like(prompts)})
  with pytest.raises(ValueError, match="'abacus' reads \\['digit_index'\\] of every token"):
    gen.generate(_model("abacus"), prompts, LENGTHS, max_new_tokens=2, eos_id=1, pad_id=PAD)
