"""The main job end to end, in subprocesses: sharded = single-device losses, SIGKILL and
resume = an uninterrupted run bit for bit, the evaluate CLI on a saved checkpoint, and
config errors that name their fix. A one-device run that others are compared against trains
in this process, and runs compared with each other on two devices share one process
(training_testing): none of them is a test of the command itself."""
import json
import math
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from nupa_jax import cli
from nupa_jax import data
from nupa_jax import saved_run
from nupa_jax.data import source
from nupa_jax.data import workers
from nupa_jax.training import optimizer
from nupa_jax.training import trainer

import training_testing

STEP_FIELDS = ("step", "samples_seen", "loss", "learning_rate", "grad_norm")


def step_records(workdir: pathlib.Path) -> list[dict]:
  lines = (workdir / "train_metrics.jsonl").read_text().splitlines()
  return [r for r in map(json.loads, lines) if "event" not in r]


def test_sharded_run_matches_single_device(tmp_path):
  """Mesh data 2 x fsdp 2 x tensor 2 on 8 fake devices, and data parallel on 2 with the
  optimizer state split over data, each step's rows in 2 microbatches and each batch's fields
  placed as one stacked array: the same losses as one device, and the same validation loss."""
  steps = {"train.steps": 4}
  training_testing.train(tmp_path / "one", **steps)
  mesh = {"mesh.shape.data": 2, "mesh.shape.fsdp": 2, "mesh.shape.tensor": 2}
  eight = training_testing.run("nupa_jax.train", training_testing.micro_args(
      tmp_path / "eight", **steps, **mesh), devices=8)
  assert "mesh {'data': 2, 'fsdp': 2, 'tensor': 2}" in eight.stdout
  training_testing.run("nupa_jax.train", training_testing.micro_args(
      tmp_path / "zero1", **steps, **{"mesh.shard_optimizer_over_data": True,
                                      "train.microbatches": 2, "data.stacked_transfer": True}),
      devices=2)
  one = step_records(tmp_path / "one")
  assert [r["step"] for r in one] == [1, 2, 3, 4]
  for other in ("eight", "zero1"):
    records = step_records(tmp_path / other)
    assert [r["step"] for r in records] == [1, 2, 3, 4]
    for a, b in zip(one, records):
      np.testing.assert_allclose([a[k] for k in STEP_FIELDS], [b[k] for k in STEP_FIELDS],
                                 rtol=2e-5)
  assert one[-1]["loss"] < one[0]["loss"]
  val_losses = {name: [json.loads(x)["val_loss"] for x in
                       (tmp_path / name / "train_metrics.jsonl").read_text().splitlines()
                       if json.loads(x).get("event") == "eval"] for name in ("one", "zero1")}
  assert len(val_losses["one"]) == 1
  np.testing.assert_allclose(val_losses["zero1"], val_losses["one"], rtol=2e-5)
  schedule = optimizer.schedule(training_testing.micro_config(**steps).train)
  assert [r["learning_rate"] for r in one] == pytest.approx(
      [float(schedule(s)) for s in range(4)])  # step s uses the rate of its optimizer count
  assert [r["samples_seen"] for r in one] == [16, 32, 48, 64]


def test_several_steps_a_call_repeat_the_one_step_run(tmp_path):
  """train.steps_per_call=2 on 2 data-parallel devices (a scan over two batches a call; 7
  steps, so the last call runs one), alone and with the other step options (microbatches,
  the optimizer state split over data, stacked batch fields): the one-step-a-call run's log
  records, losses and validation loss, up to float rounding."""
  settings = {"train.steps": 7, "train.log_every": 2, "checkpoint.every": 2}
  options = {"train.microbatches": 2, "mesh.shard_optimizer_over_data": True,
             "data.stacked_transfer": True}
  training_testing.train_in_one_process([
      (tmp_path / name, {**settings, **other, "train.steps_per_call": per_call})
      for name, per_call, other in (("one", 1, {}), ("two", 2, {}), ("two_options", 2, options))
  ], devices=2)
  names = ("two", "two_options")
  one = step_records(tmp_path / "one")
  val_losses = {name: [json.loads(x)["val_loss"] for x in
                       (tmp_path / name / "train_metrics.jsonl").read_text().splitlines()
                       if json.loads(x).get("event") == "eval"] for name in ("one", *names)}
  for name in names:
    records = step_records(tmp_path / name)
    assert [r["step"] for r in one] == [r["step"] for r in records] == [2, 4, 6, 7], name
    for a, b in zip(one, records):
      np.testing.assert_allclose([a[k] for k in STEP_FIELDS], [b[k] for k in STEP_FIELDS],
                                 rtol=2e-5, err_msg=name)
    assert [r["samples_seen"] for r in records] == [32, 64, 96, 112]
    np.testing.assert_allclose(val_losses[name], val_losses["one"], rtol=2e-5, err_msg=name)
    assert _committed_steps(tmp_path / name)[-1] == 7


def _committed_steps(workdir: pathlib.Path) -> list[int]:
  directory = workdir / "checkpoints"
  return sorted(int(p.name) for p in directory.glob("*") if p.name.isdigit()) if (
      directory.exists()) else []


def _logged_steps(workdir: pathlib.Path) -> list[int]:
  path = workdir / "train_metrics.jsonl"
  steps = []
  for line in path.read_text().splitlines() if path.exists() else []:
    try:
      steps.append(json.loads(line)["step"])
    except (json.JSONDecodeError, KeyError):
      pass
  return steps


def test_sigkill_and_resume_repeats_the_uninterrupted_losses_bit_for_bit(tmp_path):
  total = 100  # long enough that an async checkpoint commits well before the end
  settings = {"train.steps": total, "checkpoint.every": 10}
  training_testing.train(tmp_path / "ref", **settings)
  killed = tmp_path / "killed"
  process = subprocess.Popen(
      [sys.executable, "-m", "nupa_jax.train", *training_testing.micro_args(killed, **settings)],
      cwd=training_testing.ROOT, env=training_testing.env(),
      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  deadline = time.time() + 240
  while time.time() < deadline and process.poll() is None:
    committed = _committed_steps(killed)
    if committed and max(_logged_steps(killed), default=0) >= committed[-1] + 2:
      break
    time.sleep(0.005)
  process.send_signal(signal.SIGKILL)
  process.wait()
  logged_before = max(_logged_steps(killed), default=0)
  assert process.returncode == -signal.SIGKILL and logged_before < total, (
      "the run ended before it could be killed mid-way")
  resumed = training_testing.run(
      "nupa_jax.train", training_testing.micro_args(killed, **settings))
  restored = int(resumed.stdout.split("resuming from the checkpoint of step ")[1].split()[0])
  assert 0 < restored < logged_before

  reference, after = step_records(tmp_path / "ref"), step_records(killed)
  assert [r["step"] for r in after] == list(range(1, total + 1))  # each step once
  for a, b in zip(reference, after):
    assert [a[k] for k in STEP_FIELDS] == [b[k] for k in STEP_FIELDS]  # bit for bit
  events = [json.loads(line) for line in (killed / "train_metrics.jsonl").read_text().splitlines()
            if '"event"' in line]
  assert {"event": "resume", "step": restored} in events

  # The evaluate CLI on the finished run's latest checkpoint: a file of its own, named by its
  # settings, and the trainer's results left as they were.
  def trainer_results():
    return {p.name: p.read_text() for p in (killed / "eval").glob("*.json")}
  before = trainer_results()
  result = training_testing.run("nupa_jax.evaluate", [
      f"--workdir={killed}", "--checkpoint=latest", "--per-length", "3", "--tasks=add_int",
      "--decoding=greedy", "--predictions"])
  written = killed / "eval" / "evaluations" / f"step_{total}_greedy_3q_add_int.json"
  report = json.loads(written.read_text())
  assert trainer_results() == before
  assert report["_meta"]["greedy"] is True and report["_meta"]["per_length"] == 3
  assert report["_meta"]["step"] == total and report["_meta"]["samples_seen"] == total * 16
  add = report["add_int"]
  assert sorted(map(int, add["per_digit"])) == [3, 4]
  assert add["S"]["n"] == 6 and add["M"]["n"] == 0
  assert set(add["S"]) == {"exact_match", "digit_match", "dlength", "n"}
  assert "well_learned_digits" in add and "performance_preserving_digits" in add
  assert "add_int" in result.stdout and "S EM/DM/dlen" in result.stdout
  # Its answers beside it, one line a question: their means are the file's per-length numbers.
  answers = written.with_name(f"step_{total}_greedy_3q_add_int.predictions.jsonl")
  assert f"answers: {answers}" in result.stdout
  lines = [json.loads(line) for line in answers.read_text().splitlines()]
  assert len(lines) == 6 and len({line["id"] for line in lines}) == 6
  for digits, scores in add["per_digit"].items():
    mine = [line for line in lines if line["digits"] == int(digits)]
    for metric in ("exact_match", "digit_match", "dlength"):
      assert math.isclose(sum(line[metric] for line in mine) / len(mine), scores[metric])
  # Ids drawn as in training need a PE trained on random positions; this run's RoPE is not.
  with pytest.raises(ValueError, match="posenc 'rope' trains on consecutive ids"):
    saved_run.evaluate_checkpoint(killed, "latest", ["add_int"], 3, positions="training")


@pytest.mark.parametrize("overrides, message", [
    ({"model.posenc": {"name": "rpoe"}}, "unknown positional encoding 'rpoe'; known: "),
    ({"mesh.shape": {"data": 3, "fsdp": 1, "tensor": 1}},
     "config.mesh.shape .* uses 3 devices but 1 are available"),
    ({"data.tasks": {"add_integer": 1.0}}, "add_integer"),
    ({"train.steps_per_call": 3},
     "config.train.log_every=1 is not a multiple of config.train.steps_per_call=3"),
    ({"model.cudnn_segments": 4},
     r"config.model.cudnn_segments=4 must exceed the 4 samples a row holds .* set it to 5"),
    ({"model.attention_span": 5},
     r"a sample of (\d+) positions in the stream's probe is longer than "
     r"config.model.attention_span=5, .* set it to at least \1"),
])
def test_config_errors_name_the_fix(tmp_path, overrides, message):
  config = training_testing.micro_config()
  for key, value in overrides.items():
    section, name = key.split(".")
    config[section][name] = value
  with pytest.raises(trainer.ConfigError, match=message):
    trainer.train_and_evaluate(config, tmp_path)
  assert not (tmp_path / "checkpoints").exists()


def test_a_batch_holding_a_sample_longer_than_the_attention_span_stops_the_run(
    tmp_path, monkeypatch):
  """A sample longer than `model.attention_span` that the pipeline's probe missed (here: a
  probe made to report 5 positions) stops the run at the first batch holding one, before a
  step runs on it, with the span it needs."""
  probe = source.cell_positions
  monkeypatch.setattr(source, "cell_positions", lambda *args: (probe(*args)[0], 5))
  config = training_testing.micro_config(**{"model.attention_span": 5})
  with pytest.raises(data.LongSampleError, match=r"in batch \d+ .* set it to at least"):
    trainer.train_and_evaluate(config, tmp_path)
  assert (tmp_path / "train_metrics.jsonl").read_text() == ""


def test_validation_batches_are_made_without_workers_and_training_batches_with(
    tmp_path, monkeypatch):
  """A run with grain workers makes its few validation batches in its own process (workers
  would take seconds to start for a fraction of a second of work) and its training batches
  with the workers it was given. The training iterator is stopped before any worker starts."""

  class Stop(Exception):
    pass

  asked = {}
  val_iterator = data.Pipeline.val_iterator

  def recorded_val_iterator(self, *args, **kwargs):
    asked["validation"] = kwargs.get("num_workers")
    return val_iterator(self, *args, **kwargs)

  def stopped_train_iterator(self, *args, **kwargs):
    asked["training"] = kwargs.get("num_workers")  # None: the pipeline's own count
    asked["pipeline"] = self.num_workers
    raise Stop

  monkeypatch.setattr(data.Pipeline, "val_iterator", recorded_val_iterator)
  monkeypatch.setattr(data.Pipeline, "train_iterator", stopped_train_iterator)
  config = training_testing.micro_config(**{"data.num_workers": 2})
  with pytest.raises(Stop):
    trainer.train_and_evaluate(config, tmp_path)
  assert asked == {"validation": 0, "training": None, "pipeline": 2}


@pytest.mark.parametrize("accelerators, per_call", [(0, 1), (1, 1), (4, 4)])
def test_a_run_takes_automatic_steps_per_call_from_its_accelerators(
    tmp_path, monkeypatch, accelerators, per_call):
  monkeypatch.setattr(workers, "local_accelerators", lambda: accelerators)
  config = training_testing.micro_config(
      **{"train.log_every": 4, "checkpoint.every": 8, "eval.every": 0})
  assert config.train.steps_per_call == 0  # the default: automatic
  run = trainer._Run(config, tmp_path)
  assert run.train.steps_per_call == run.config.train.steps_per_call == per_call  # config.json
  assert config.train.steps_per_call == 0  # the caller's config is left as it was


def test_a_cpu_process_counts_no_accelerators():
  assert workers.local_accelerators() == 0


def test_cli_without_workdir_or_with_an_unknown_pe_says_so(tmp_path):
  missing = training_testing.run("nupa_jax.train", ["--config=configs/pe.py:size=tiny"],
                                 check=False)
  assert missing.returncode != 0 and "--workdir" in missing.stderr
  bad_pe = training_testing.run("nupa_jax.train", [
      "--config=configs/pe.py:pe=rpoe,size=tiny", f"--workdir={tmp_path}"], check=False)
  assert bad_pe.returncode == 2
  assert "config error: unknown positional encoding 'rpoe'" in bad_pe.stderr


@pytest.mark.parametrize("bad, message", [
    ({"loss": float("nan")}, "the loss became nan at step 3"),
    ({"grad_norm": float("inf")}, "the gradient norm became inf at step 3"),
])
def test_a_non_finite_loss_or_gradient_stops_the_run(bad, message):
  """Checked for every step at a log / checkpoint step, before anything is saved."""
  window = trainer._Window()
  good = {"loss": 1.0, "grad_norm": 0.5, "learning_rate": 1e-3, "tokens": 10}
  window.pending = [(1, good), (2, good), (3, {**good, **bad}), (4, good)]
  with pytest.raises(trainer.DivergedError, match=message):
    window.fetch()
  assert len(window.metrics) == 2


def test_cli_exits_with_its_own_status_when_the_loss_diverges(tmp_path):
  """A diverged run exits with cli.DIVERGED, apart from a crash (1), so a sweep does not start
  it again (launch/sweep.py FINAL_STATUSES)."""
  result = training_testing.run("nupa_jax.train", training_testing.micro_args(
      tmp_path, **{"train.steps": 20, "train.learning_rate": 1e30, "train.warmup_steps": 0}),
      check=False)
  assert result.returncode == cli.DIVERGED, result.stderr[-4000:]
  assert "training diverged: " in result.stderr


# `python -m nupa_jax.train` with every task's solver failing: on the questions of 1-2 digits
# (trained on, not tested: the first fails as the pipeline sizes its rows), or on every question
# made outside the main thread (the training batches).
_FAILING_SOLVER_TRAIN = """
import runpy, sys, threading
from nupa_jax.tasks import registry
solve, short = registry.Task.solve, sys.argv.pop(1) == "short_questions"
def failing(self, a, b):
  if (max(len(a), len(b)) <= 2 if short else
      threading.current_thread() is not threading.main_thread()):
    raise ArithmeticError("no answer")
  return solve(self, a, b)
registry.Task.solve = failing
sys.argv[0] = "nupa_jax.train"
runpy.run_module("nupa_jax.train", run_name="__main__")
"""


@pytest.mark.parametrize("where", ["short_questions", "training_batches"])
def test_cli_exits_with_its_own_status_when_a_training_question_cannot_be_made(tmp_path, where):
  """A question that its task's solver fails on ends the run with cli.DATA_ERROR and one line
  naming it, so a sweep does not start it again (every attempt would reach the same question):
  whether it comes up as the pipeline sizes its rows or in a training batch."""
  result = subprocess.run(
      [sys.executable, "-c", _FAILING_SOLVER_TRAIN, where,
       *training_testing.micro_args(tmp_path, **{"train.steps": 5})],
      cwd=training_testing.ROOT, env=training_testing.env(), capture_output=True, text=True,
      timeout=300)
  assert result.returncode == cli.DATA_ERROR, result.stderr[-4000:]
  assert "Traceback" not in result.stderr, result.stderr[-4000:]
  last = result.stderr.strip().splitlines()[-1]
  assert re.fullmatch(r"training data error: add_int at \d digits \('\d+', '\d+'\): "
                      r"ArithmeticError: no answer", last), result.stderr[-4000:]


def test_a_run_resumed_between_calls_realigns_them_and_repeats_the_one_step_run(tmp_path):
  """A one-step-a-call run checkpointed at step 3, resumed there with 2 steps a call: its
  first call runs step 4 alone, so calls end on even steps again; the records at steps 4, 6
  and 7 repeat the one-step run's per-step values (step 6's loss the mean of steps 5 and 6)."""
  workdir = tmp_path / "run"
  training_testing.run("nupa_jax.train", training_testing.micro_args(
      workdir, **{"train.steps": 7, "train.log_every": 1, "checkpoint.every": 3,
                  "checkpoint.keep": 5}), devices=2)
  per_step = {r["step"]: r for r in step_records(workdir)}
  assert sorted(per_step) == [1, 2, 3, 4, 5, 6, 7]
  assert _committed_steps(workdir) == [3, 6, 7]
  for step in (6, 7):
    shutil.rmtree(workdir / "checkpoints" / str(step))
  training_testing.run("nupa_jax.train", training_testing.micro_args(
      workdir, **{"train.steps": 7, "train.log_every": 2, "checkpoint.every": 2,
                  "train.steps_per_call": 2}), devices=2)
  resumed = step_records(workdir)
  assert [r["step"] for r in resumed] == [1, 2, 3, 4, 6, 7]
  expected = {4: per_step[4], 7: per_step[7],
              6: {**per_step[6], "loss": (per_step[5]["loss"] + per_step[6]["loss"]) / 2,
                  "grad_norm": (per_step[5]["grad_norm"] + per_step[6]["grad_norm"]) / 2}}
  for record in resumed[3:]:
    want = expected[record["step"]]
    np.testing.assert_allclose([record[k] for k in STEP_FIELDS], [want[k] for k in STEP_FIELDS],
                               rtol=2e-5, err_msg=f"step {record['step']}")
