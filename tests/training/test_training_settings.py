"""Typed config sections: one name per knob, fields nobody reads refused, old runs upgraded."""
import glob
import json
import pathlib

import ml_collections
import pytest

from configs import common
from nupa_jax import runmode
from nupa_jax import saved_run
from nupa_jax import settings
from nupa_jax.data import settings as data_settings
from nupa_jax.evaluation import settings as eval_settings
from nupa_jax.training import settings as train_settings

ROOT = pathlib.Path(__file__).parents[2]
OLD_RUNS = sorted(glob.glob(str(ROOT / "docs/results/*/runs/*/config.json")))


def test_sections_read_the_base_config():
  c = common.base("tiny", seed=3)
  train = train_settings.Train.from_config(c)
  assert (train.steps, train.batch_size, train.learning_rate) == (4000, 32, 4e-4)
  assert eval_settings.Eval.from_config(c).digits == (1, 20)
  assert train_settings.Checkpoint.from_config(c).every == 1000
  data = data_settings.Settings.from_config(c)
  assert (data.seed, data.batch_size) == (3, 32)  # config.seed and config.train.batch_size


@pytest.mark.parametrize("section, field, hint", [
    ("eval", "test_seed", "did you mean config.data.test_seed"),
    ("data", "seed", "did you mean config.seed"),
    ("data", "batch_size", "did you mean config.train.batch_size"),
    ("train", "lr", "known: b1, b2"),
])
def test_a_field_nobody_reads_is_refused_by_name(section, field, hint):
  c = common.base("tiny")
  c[section][field] = 1
  readers = {"eval": eval_settings.Eval.from_config, "data": data_settings.Settings.from_config,
             "train": train_settings.Train.from_config}
  with pytest.raises(ValueError, match=f"config.{section}.{field} is not read by anything; "
                                       f"{hint}"):
    readers[section](c)


def test_checks_name_the_field():
  c = common.base("tiny")
  c.checkpoint.every = 0
  with pytest.raises(ValueError, match="config.checkpoint.every must be >= 1"):
    train_settings.Checkpoint.from_config(c)
  c.eval.every = -1
  with pytest.raises(ValueError, match="config.eval.every must be >= 0"):
    eval_settings.Eval.from_config(c)


def test_upgrade_maps_legacy_fields_as_old_runs_used_them():
  old = ml_collections.ConfigDict({
      "seed": 4, "data": {"seed": 4, "batch_size": 0, "tasks": {"add_int": 1.0}},
      "train": {"batch_size": 64}, "eval": {"test_seed": 7, "every": 0}})
  new = settings.upgrade(old)
  assert new.to_dict() == {"seed": 4, "data": {"tasks": {"add_int": 1.0}},
                           "train": {"batch_size": 64}, "eval": {"every": 0}}
  assert "test_seed" in old.eval  # the saved config is left as it was
  # A nonzero data.batch_size was the batch the pipeline used.
  assert settings.upgrade(ml_collections.ConfigDict(
      {"data": {"batch_size": 16}, "train": {"batch_size": 64}})).train.batch_size == 16
  # Without a top-level seed, the data seed was the run's only one.
  assert settings.upgrade(ml_collections.ConfigDict({"data": {"seed": 2}})).seed == 2


@pytest.mark.skipif(not OLD_RUNS, reason="no saved runs under docs/results")
def test_old_workdirs_read_into_every_section():
  for path in OLD_RUNS:
    raw = json.loads(pathlib.Path(path).read_text())
    c = saved_run.load_run_config(pathlib.Path(path).parent)
    train_settings.Train.from_config(c)
    train_settings.Checkpoint.from_config(c)
    eval_settings.Eval.from_config(c)
    data = data_settings.Settings.from_config(c)
    assert data.seed == raw["data"].get("seed", raw["seed"])
    assert data.batch_size == (raw["data"].get("batch_size") or raw["train"]["batch_size"])
    rfcot_run = "/rfcot/runs/answer-rfcot_" in path  # the one RF-CoT arm among the results
    assert runmode.resolve(c).name == ("rfcot" if rfcot_run else "digits") + "/scratch"
