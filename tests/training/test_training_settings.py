"""Typed config sections: one name per knob, fields nobody reads refused, old runs upgraded."""
import glob
import json
import pathlib
import re

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
    rfcot_run = re.search(r"/rfcot/runs/lr-[^/]*_answer-rfcot_", path) is not None
    assert runmode.resolve(c).name == ("rfcot" if rfcot_run else "digits") + "/scratch"


@pytest.mark.parametrize("accelerators, intervals, expected", [
    (0, (100, 1000, 0), 1),  # a CPU run
    (1, (100, 1000, 0), 1),  # one GPU keeps its step's rate with one step a call
    (4, (100, 2500, 0), 4),  # eval.every 0: only at the end, not a stop to align to
    (4, (100, 2500, 50_000), 4),
    (2, (100, 1000, 10), 2),  # 10 is no multiple of 4
    (8, (5, 1000, 0), 1),  # a log every 5 steps fits neither 4 nor 2
    (4, (100, 3907, 0), 4),  # a checkpoint only at the run's end (3,907 steps): no stop
    (4, (100, 10**9, 0), 4),  # to align to, as for an interval past the run
])
def test_automatic_steps_per_call_divides_every_stop(accelerators, intervals, expected):
  assert train_settings.auto_steps_per_call(accelerators, intervals, steps=3907) == expected


def test_train_settings_resolve_auto_steps_per_call_and_keep_a_given_count():
  c = common.base("tiny")
  c.train.log_every = 100
  train = train_settings.Train.from_config(c)
  assert train.steps_per_call == train_settings.AUTO_STEPS_PER_CALL  # the default
  assert train.resolved(4, checkpoint_every=1000, eval_every=0).steps_per_call == 4
  assert train.resolved(1, checkpoint_every=1000, eval_every=0).steps_per_call == 1
  assert train.resolved(4, checkpoint_every=1002, eval_every=0).steps_per_call == 2
  assert train.resolved(4, checkpoint_every=train.steps, eval_every=0).steps_per_call == 4
  c.train.steps_per_call = 3  # by hand: kept, whatever the devices (the trainer checks it)
  assert train_settings.Train.from_config(c).resolved(4, 1000, 0).steps_per_call == 3
  c.train.steps_per_call = -1
  with pytest.raises(ValueError, match="steps_per_call must be >= 1, or 0 for the automatic"):
    train_settings.Train.from_config(c)
