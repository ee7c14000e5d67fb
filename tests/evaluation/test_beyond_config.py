"""configs/beyond.py: every positional encoding builds a run that passes the trainer's start-up
checks at 100 digits, and a tiny run trains and scores lengths past the benchmark end to end."""
import json

import numpy as np
import pytest
from flax import nnx

from configs import beyond
from nupa_jax import data
from nupa_jax import models
from nupa_jax import tasks
from nupa_jax import sharding
from nupa_jax.data import settings
from nupa_jax.evaluation import evaluator as evaluator_lib
from nupa_jax.models import posenc
from nupa_jax.text import Encoder
from nupa_jax.training import trainer
from tests.training import training_testing

# A one-layer model, two steps, two questions per length: seconds on a CPU.
MICRO = {"model.num_layers": 1, "model.hidden": 32, "model.mlp": 64, "model.heads": 4,
         "model.kv_heads": 2, "train.steps": 2, "train.batch_size": 16, "train.log_every": 1,
         "train.warmup_steps": 1, "data.samples_per_row": 4, "data.train_digits": (1, 4),
         "eval.digits": (3, 3), "eval.per_length": 2, "eval.batch_size": 8,
         "eval.validation_batches": 1, "checkpoint.every": 2}


def test_lengths_past_the_benchmark():
  assert beyond.beyond_lengths(20, 100, 1) == tuple(range(21, 101))
  assert beyond.beyond_lengths(20, 100, 10) == (21, 30, 40, 50, 60, 70, 80, 90, 100)
  with pytest.raises(ValueError, match="test > train"):
    beyond.beyond_lengths(20, 20, 1)


@pytest.mark.parametrize("pe", posenc.names())
def test_every_pe_builds_a_run_that_passes_start_up_checks(pe):
  config = beyond.get_config(f"pe={pe},size=tiny")
  assert tuple(config.data.train_digits) == (1, 20)
  assert config.eval.beyond_digits[0] == 21 and config.eval.beyond_digits[-1] == 100
  config.eval.per_length = 1
  encoder = Encoder(tokenizer=config.text.tokenizer.to_dict(), format=config.text.format.to_dict())
  model_config = models.resolve(config.model, encoder.vocab_size)
  settings.Settings.from_config(config)
  # The features the run's PE reads: what the trainer hands the evaluator.
  inputs = nnx.eval_shape(lambda: posenc.build(model_config, rngs=nnx.Rngs(0))).inputs
  evaluator = evaluator_lib.Evaluator(config, encoder, sharding.make_mesh({"data": -1}), inputs)
  assert max(q.digits for q in evaluator.questions["add_int"]) == 100


def test_randomization_follows_each_recipe_and_refuses_where_absent():
  assert dict(beyond.get_config("pe=abacus,size=tiny").model.posenc)["max_offset"] == 100
  assert dict(beyond.get_config("pe=coupled,random=off,size=tiny").model.posenc)[
      "max_offset"] == 0
  assert "random_positions" not in beyond.get_config("pe=rope,size=tiny").model.posenc
  assert beyond.get_config("pe=rope,random=on,size=tiny").model.posenc.random_positions == 1024
  assert beyond.get_config("pe=fire,size=tiny").model.posenc.random_positions == 1024
  with pytest.raises(ValueError, match="'alibi' has no random offsets or positions"):
    beyond.get_config("pe=alibi,random=on,size=tiny")


@pytest.mark.parametrize("hints", [False, True])
def test_fire_attends_within_a_band_that_holds_every_training_sample(hints):
  """FIRE's band (`model.attention_span`) against 2,000 questions drawn at the longest
  training length and encoded in the run's format; other PEs attend over whole rows."""
  config = beyond.get_config(f"pe=fire,hints={hints},size=tiny")
  _, encoder = data.run_config(config)
  task, rng = tasks.get("add_int"), np.random.default_rng(0)
  drawn = []
  for _ in range(2000):
    a, b = task.sample(rng, 20)
    drawn.append(len(encoder.encode("add_int", a, b, task.solve(a, b), rng)[0]) - 1)
  assert config.model.attention_span == max(drawn) == (125 if hints else 64)
  assert beyond.get_config("pe=rope,size=tiny").model.attention_span == 0
  assert beyond.get_config("pe=fire,task=add_float,size=tiny").model.attention_span == 0


def test_tiny_coupled_run_scores_lengths_past_the_benchmark(tmp_path):
  """Units-first coupled positions, continued through generation, on 3, 21 and 25 digits.
  Trained in this process: the run, not its command line, is under test."""
  config = beyond.get_config("pe=coupled,size=tiny,test=25,stride=4")
  trainer.train_and_evaluate(training_testing.override(config, MICRO), tmp_path)
  results = json.loads((tmp_path / "eval" / "latest.json").read_text())
  assert results["_meta"]["positions"] == "consecutive"
  summary = results["add_int"]
  assert sorted(map(int, summary["per_digit"])) == [3, 21, 25]
  assert summary["beyond"]["n"] == 4 and summary["S"]["n"] == 2
  assert 0 <= summary["beyond"]["digit_match"] <= 1
