"""Faults in one process: SIGINT mid-run saves a checkpoint and the rerun resumes bit for bit;
a rerun that finds no checkpoint restarts its log instead of repeating steps; the final
checkpoint is committed before the final evaluation starts."""
import json
import pathlib
import shutil
import signal
import subprocess
import sys
import time

from nupa_jax.evaluation import evaluator as evaluator_lib
from nupa_jax.training import trainer

import training_testing

STEP_FIELDS = ("step", "samples_seen", "loss", "learning_rate", "grad_norm")


def _records(workdir: pathlib.Path) -> list[dict]:
  path = workdir / "train_metrics.jsonl"
  return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _steps(workdir: pathlib.Path) -> list[dict]:
  return [[r[k] for k in STEP_FIELDS] for r in _records(workdir) if "event" not in r]


def _events(workdir: pathlib.Path) -> list[dict]:
  return [r for r in _records(workdir) if "event" in r]


def test_sigint_saves_a_checkpoint_and_the_rerun_resumes_bit_for_bit(tmp_path):
  total = 30
  settings = {"train.steps": total, "checkpoint.every": 1000}  # only the stop saves mid-run
  training_testing.train(tmp_path / "ref", **settings)  # in this process: not the one stopped
  reference = _steps(tmp_path / "ref")
  assert [s[0] for s in reference] == list(range(1, total + 1))

  stopped = tmp_path / "stopped"
  process = subprocess.Popen(
      [sys.executable, "-m", "nupa_jax.train", *training_testing.micro_args(stopped, **settings)],
      cwd=training_testing.ROOT, env=training_testing.env(),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  deadline = time.time() + 240
  while time.time() < deadline and process.poll() is None and len(_steps(stopped)) < 5:
    time.sleep(0.01)
  process.send_signal(signal.SIGINT)
  _, stderr = process.communicate(timeout=240)
  assert process.returncode == 130, stderr[-4000:]
  assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr[-4000:]
  at = len(_steps(stopped))  # log_every=1: the last logged step is the step it stopped at
  assert 5 <= at < total
  assert (f"stopped by SIGINT at step {at}: checkpoint saved in {stopped.resolve()}/checkpoints; "
          "rerun the same command to resume") in stderr.splitlines()
  assert _events(stopped) == [{"event": "stop", "step": at, "signal": "SIGINT"}]
  assert sorted(int(p.name) for p in (stopped / "checkpoints").iterdir()) == [at]
  assert _steps(stopped) == reference[:at]

  # The same run without its checkpoint: a rerun from step 0 restarts the log.
  restarted = tmp_path / "restarted"
  shutil.copytree(stopped, restarted)
  shutil.rmtree(restarted / "checkpoints")

  training_testing.run("nupa_jax.train", training_testing.micro_args(stopped, **settings))
  assert _steps(stopped) == reference  # each step once, bit for bit
  assert _events(stopped)[:2] == [{"event": "stop", "step": at, "signal": "SIGINT"},
                                  {"event": "resume", "step": at}]

  training_testing.run("nupa_jax.train", training_testing.micro_args(restarted, **settings))
  assert _records(restarted)[0] == {"event": "restart", "step": 0}
  assert _steps(restarted) == reference


def test_the_final_checkpoint_is_committed_before_the_final_evaluation(tmp_path, monkeypatch):
  committed_at_evaluation = []
  evaluate = evaluator_lib.Evaluator.evaluate

  def watched(self, graphdef, state, report=None):
    committed_at_evaluation.append(sorted(
        int(p.name) for p in (tmp_path / "checkpoints").iterdir() if p.name.isdigit()))
    return evaluate(self, graphdef, state, report)

  monkeypatch.setattr(evaluator_lib.Evaluator, "evaluate", watched)
  config = training_testing.micro_config(**{"train.steps": 2, "checkpoint.every": 1000,
                                            "eval.every": 0, "checkpoint.async_save": True})
  trainer.train_and_evaluate(config, tmp_path)
  assert committed_at_evaluation == [[2]]
