"""Evaluation position ids: the rule that draws them as randomized-position training does, the
setting that picks it, and a saved run scored both ways (the evaluator's use of them:
test_evaluator.py)."""
import collections
import itertools
import json

import numpy as np
import pytest

from configs import paper
from nupa_jax import checkpoint as checkpoint_lib
from nupa_jax import saved_run
from nupa_jax.evaluation import positions as positions_lib
from nupa_jax.evaluation import results as results_lib
from nupa_jax.evaluation import settings as settings_lib
from nupa_jax.training import trainer
from tests.training import training_testing


def test_ids_as_in_training_are_a_sorted_subset_for_the_sample_then_go_on_by_ones():
  seeds = [(0, 1), (0, 2), (0, 3)]
  ids = positions_lib.as_in_training([4, 12, 2], 20, 64, seeds)
  assert ids.shape == (3, 20) and ids.dtype == np.int32
  for row, length in zip(ids, (4, 12, 2)):
    drawn, after = row[:length], row[length:]
    assert (np.diff(drawn) > 0).all() and drawn.min() >= 0 and drawn.max() < 64
    np.testing.assert_array_equal(after, np.minimum(drawn[-1] + np.arange(1, 21 - length), 63))
  np.testing.assert_array_equal(ids, positions_lib.as_in_training([4, 12, 2], 20, 64, seeds))
  # Each row's ids come from its own seed alone: the same seed, the same ids in any batch.
  np.testing.assert_array_equal(positions_lib.as_in_training([12], 20, 64, [(0, 2)])[0], ids[1])
  assert (positions_lib.as_in_training([12], 20, 64, [(0, 9)])[0] != ids[1]).any()
  # A row narrower than its draw keeps the draw's first ids; a draw longer than M is refused.
  np.testing.assert_array_equal(positions_lib.as_in_training([12], 8, 64, [(0, 2)])[0],
                                ids[1, :8])
  with pytest.raises(ValueError, match="cannot draw 65 distinct position ids below the PE's "
                     "random_positions=64"):
    positions_lib.as_in_training([4, 65], 80, 64, seeds[:2])
  # A sample as long as the range takes all of it.
  np.testing.assert_array_equal(positions_lib.as_in_training([12], 16, 12, [(0,)]),
                                [list(range(12)) + [11] * 4])


def test_ids_as_in_training_are_uniform_over_subsets():
  """Every 2-subset of [0, 5) equally often (10 of them; 4,000 draws, ~400 each)."""
  counts = collections.Counter()
  for seed in range(4000):
    counts[tuple(positions_lib.as_in_training([2], 2, 5, [(seed,)])[0])] += 1
  assert set(counts) == set(itertools.combinations(range(5), 2))
  assert max(counts.values()) < 480 and min(counts.values()) > 320  # ~4 standard deviations


def test_question_seeds_take_the_question_id_and_any_sample_seed():
  a = positions_lib.question_seed(0, "add_int/8/3")
  assert a == positions_lib.question_seed(0, "add_int/8/3") != positions_lib.question_seed(
      0, "add_int/8/4")
  assert positions_lib.question_seed(-1, "add_int/8/3")[0] == 2**32 - 1  # numpy takes it


def test_the_setting_names_its_choices_and_the_file_name_keeps_them_apart():
  assert settings_lib.Eval().positions == "consecutive"
  with pytest.raises(ValueError, match="config.eval.positions 'random' is not one of: "
                     "consecutive, training, training_longest"):
    settings_lib.Eval(positions="random")
  assert results_lib.evaluation_name(7, True, 100) == "step_7_greedy_100q.json"
  assert results_lib.evaluation_name(7, True, 100, ["add_int"], "training") == (
      "step_7_greedy_100q_add_int_training-positions.json")
  assert results_lib.evaluation_name(7, False, 20, None, "training_longest") == (
      "step_7_sampled_20q_training_longest-positions.json")


def test_a_saved_random_position_run_is_scored_each_way_in_files_of_their_own(tmp_path,
                                                                              monkeypatch):
  """A two-step run of the rev_vs_pad recipe with random position ids, trained in this process;
  its checkpoint re-evaluated at ids drawn as in training (for its own answer and for the
  longest of its length) and at consecutive ids, one call at a time and all in one call."""
  config = training_testing.override(
      paper.get_config("table=rev_vs_pad,pad=true,random_positions=1024,size=tiny"),
      {**training_testing.MICRO, "train.steps": 2, "train.warmup_steps": 1,
       "eval.per_length": 2, "eval.digits": (3, 3), "checkpoint.every": 2})
  trainer.train_and_evaluate(config, tmp_path)
  latest = json.loads((tmp_path / "eval" / "latest.json").read_text())
  assert latest["_meta"]["positions"] == "consecutive"
  step, training, path = saved_run.evaluate_checkpoint(tmp_path, "latest", positions="training")
  assert path.name == f"step_{step}_sampled_2q_training-positions.json"
  assert json.loads(path.read_text())["_meta"]["positions"] == "training"
  _, training_longest, longest = saved_run.evaluate_checkpoint(tmp_path, "latest",
                                                               positions="training_longest")
  assert longest.name == f"step_{step}_sampled_2q_training_longest-positions.json"
  assert json.loads(longest.read_text())["_meta"]["positions"] == "training_longest"
  _, consecutive, default = saved_run.evaluate_checkpoint(tmp_path, "latest")
  assert default.name == f"step_{step}_sampled_2q.json"
  assert json.loads(default.read_text())["_meta"]["positions"] == "consecutive"

  # All three in one call, the checkpoint restored once: the same files, the same numbers.
  files = (path, longest, default)
  separate = {file: json.loads(file.read_text()) for file in files}
  restored = []
  restore = checkpoint_lib.Checkpointer.restore_params
  def counted_restore(self, at_step, *args, **kwargs):
    restored.append(at_step)
    return restore(self, at_step, *args, **kwargs)
  monkeypatch.setattr(checkpoint_lib.Checkpointer, "restore_params", counted_restore)
  for file in files:  # each call below must write its files itself
    file.unlink()
  together = saved_run.evaluate_checkpoint_at(
      tmp_path, ["training", "training_longest", None], "latest", predictions=True)
  assert restored == [step]
  assert [(s, json.dumps(r, sort_keys=True), w) for s, r, w in together] == [
      (step, json.dumps(r, sort_keys=True), w) for r, w in
      ((training, path), (training_longest, longest), (consecutive, default))]
  assert {file: json.loads(file.read_text()) for file in files} == separate
  for file in files:
    file.unlink()
    file.with_suffix(".predictions.jsonl").unlink()  # FileNotFoundError: not written
  with pytest.raises(ValueError, match="position rule 'consecutive' asked twice \\(the run's "
                     "own rule is 'consecutive'\\)"):
    saved_run.evaluate_checkpoint_at(tmp_path, [None, "training", "consecutive"], "latest")
  with pytest.raises(ValueError, match="cannot hold 2 position rules"):
    saved_run.evaluate_checkpoint_at(tmp_path, ["training", None], "latest",
                                     out=tmp_path / "both.json")
  with pytest.raises(TypeError, match="give a sequence of rules, e.g. \\['training'\\]"):
    saved_run.evaluate_checkpoint_at(tmp_path, "training", "latest")
  assert restored == [step] and not any(file.exists() for file in files)

  # The command does the same, a table and an answers file a rule.
  result = training_testing.run("nupa_jax.evaluate", [
      f"--workdir={tmp_path}", "--checkpoint=latest", "--positions=training,run",
      "--predictions"])
  for written in (path, default):
    assert f"(written to {written}):" in result.stdout
    answers = written.with_suffix(".predictions.jsonl")
    assert f"answers: {answers}" in result.stdout
    assert len(answers.read_text().splitlines()) == 2  # two questions at 3 digits
    assert json.loads(written.read_text()) == separate[written]
  assert result.stdout.count("S EM/DM/dlen") == 2 and not longest.exists()

  config_file = tmp_path / "config.json"  # a run that padded its rows cannot be scored so
  saved = json.loads(config_file.read_text())
  saved["data"]["loss_on_padding"] = True
  config_file.write_text(json.dumps(saved))
  with pytest.raises(ValueError, match="padded its rows to their longest sample"):
    saved_run.evaluate_checkpoint(tmp_path, "latest", positions="training")
  # Refused before anything is restored or scored, when it is the second rule asked too.
  default.unlink()
  with pytest.raises(ValueError, match="padded its rows to their longest sample"):
    saved_run.evaluate_checkpoint_at(tmp_path, [None, "training"], "latest")
  assert restored == [step] and not default.exists()
