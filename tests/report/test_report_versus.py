"""paper_vs_ours.csv: means, sample deviations, seeds and budgets read back from run folders."""
import csv
import json
import pathlib

import pytest

from nupa_jax.evaluation import results as results_lib
from nupa_jax.report import versus

ROOT = pathlib.Path(__file__).resolve().parents[2]
PUBLISHED = sorted((ROOT / "docs" / "results").glob("**/versus.json"))


def _run(root, name, seed, value, samples, evaluation=None):
  """A run folder whose eval/latest.json scores a checkpoint of `samples` samples; with
  `evaluation`, also a re-evaluation of its checkpoint at half as many."""
  run = root / name
  (run / "eval" / "evaluations").mkdir(parents=True)
  (run / "config.json").write_text(json.dumps({"seed": seed}))
  (run / "train_metrics.jsonl").write_text(
      json.dumps({"step": 1, "samples_seen": 7}) + "\n" + json.dumps({"event": "eval"}) + "\n")
  cell = lambda v, n: {"add_int": {"per_digit": {"8": {"digit_match": v, "exact_match": 0.0}}},
                       "_meta": {"samples_seen": n}}
  (run / "eval" / "latest.json").write_text(json.dumps(cell(value, samples)))
  if evaluation is not None:
    (run / "eval" / "evaluations" / "step_1_greedy_3q.json").write_text(
        json.dumps(cell(evaluation, samples // 2)))
  return run


SPEC = {"paper_table": "tab:x", "setting": "rope", "task": "add_int", "digits": 8,
        "metric": "digit_match", "paper": 0.97}


def test_rows_average_the_named_runs(tmp_path):
  for seed, value in enumerate((0.5, 0.75, 1.0)):
    _run(tmp_path, f"pe-rope_seed-{seed}", seed, value, 256, evaluation=value / 2)
  row = versus.row({**SPEC, "runs": [str(tmp_path / "pe-rope_seed-*")]})
  assert row["ours_mean"] == "0.750000" and row["ours_std"] == "0.250000"  # stdev of .5 .75 1
  assert row["seeds"] == "3" and row["samples_per_run"] == "256" and row["paper"] == "0.97"
  assert row["runs"].split(";") == [str(tmp_path / f"pe-rope_seed-{s}") for s in range(3)]
  greedy = versus.row({**SPEC, "runs": [str(tmp_path / "pe-rope_seed-*")]},
                      evaluation="eval/evaluations/*_greedy_*.json")
  assert greedy["ours_mean"] == "0.375000" and greedy["samples_per_run"] == "128"
  # A diagnostic scored at ids drawn as in training is refused, where the pattern finds it and
  # as a run's latest.json.
  diagnostic = {"add_int": {"per_digit": {"8": {"digit_match": 0.0}}},
                "_meta": {"samples_seen": 9, "positions": "training"}}
  name = results_lib.evaluation_name(1, True, 3, None, "training")
  for seed in range(3):
    (tmp_path / f"pe-rope_seed-{seed}" / "eval" / "evaluations" / name).write_text(
        json.dumps(diagnostic))
  assert versus.row({**SPEC, "runs": [str(tmp_path / "pe-rope_seed-*")]},
                    evaluation="eval/evaluations/*_greedy_*.json")["ours_mean"] == "0.375000"
  with pytest.raises(versus.SpecError, match=r"was scored at 'training' position ids"):
    versus.row({**SPEC, "runs": [str(tmp_path / "pe-rope_seed-*")]},
               evaluation="eval/evaluations/*training*")
  (tmp_path / "pe-rope_seed-0" / "eval" / "latest.json").write_text(json.dumps(diagnostic))
  with pytest.raises(versus.SpecError, match=r"latest.json was scored at 'training'"):
    versus.row({**SPEC, "runs": [str(tmp_path / "pe-rope_seed-*")]})

  out = tmp_path / "out.csv"
  versus.write([row], out)
  with open(out) as f:
    assert tuple(next(csv.reader(f))) == versus.COLUMNS
  assert "| 0.97 | 0.750 ± 0.250 | 3 |" in versus.markdown([row])
  assert "| 0.888 ± 0.013 |" in versus.markdown([{**row, "ours_mean": "0.887500",
                                                  "ours_std": "0.012500"}])


def test_one_run_has_no_deviation_and_budgets_that_differ_are_listed(tmp_path):
  _run(tmp_path, "a", 0, 0.25, 100)
  _run(tmp_path, "b", 0, 0.75, 200)
  row = versus.row({**SPEC, "paper": None, "runs": [str(tmp_path / "a"), str(tmp_path / "b")]})
  assert row["seeds"] == "1" and row["samples_per_run"] == "100;200" and row["paper"] == ""
  assert versus.row({**SPEC, "runs": [str(tmp_path / "a")]})["ours_std"] == ""


def test_the_samples_are_the_scored_checkpoints_not_the_logs_last_line(tmp_path):
  run = _run(tmp_path, "cut", 0, 0.5, 175104)  # stopped and scored at step 684 of 256
  with (run / "train_metrics.jsonl").open("a") as log:  # its last line: 153,600 at step 600
    log.write(json.dumps({"step": 600, "samples_seen": 153600}) + "\n")
  _run(tmp_path, "whole", 1, 0.5, 179200)
  row = versus.row({**SPEC, "runs": [str(run), str(tmp_path / "whole")]})
  assert row["samples_per_run"] == "175104;179200"
  results = json.loads((run / "eval" / "latest.json").read_text())
  del results["_meta"]["samples_seen"]
  (run / "eval" / "latest.json").write_text(json.dumps(results))
  with pytest.raises(versus.SpecError, match="latest.json has no _meta.samples_seen"):
    versus.row({**SPEC, "runs": [str(run)]})


@pytest.mark.parametrize("change, message", [
    ({"runs": ["nowhere-*"]}, "no run folder matches"),
    ({"digits": 9}, "has no add_int / 9 digits / digit_match"),
    ({"metric": "accuracy"}, "unknown metric 'accuracy'"),
])
def test_bad_rows_name_the_problem(tmp_path, change, message):
  _run(tmp_path, "a", 0, 0.5, 10)
  spec = {**SPEC, "runs": [str(tmp_path / "a")], **change}
  with pytest.raises(versus.SpecError, match=message):
    versus.row(spec)


def test_a_cell_over_every_runs_context_has_no_number(tmp_path):
  for seed in (0, 1):
    run = _run(tmp_path, f"seed-{seed}", seed, 0.5, 10)
    results = json.loads((run / "eval" / "latest.json").read_text())
    results["_meta"]["skipped_over_context"] = {"add_int": 20}
    (run / "eval" / "latest.json").write_text(json.dumps(results))
    (run / "config.json").write_text(json.dumps({"seed": seed, "eval": {"digits": [1, 8]}}))
  with pytest.raises(versus.SpecError, match="has no add_int / 9 digits"):  # not evaluated
    versus.row({**SPEC, "digits": 9, "runs": [str(tmp_path / "seed-*")]})
  for seed in (0, 1):
    config = tmp_path / f"seed-{seed}" / "config.json"
    config.write_text(json.dumps({"seed": seed, "eval": {"digits": [1, 100],
                                                         "task_digits": {"add_int": [8, 10]}}}))
  with pytest.raises(versus.SpecError, match="has no add_int / 11 digits"):  # outside 8-10
    versus.row({**SPEC, "digits": 11, "runs": [str(tmp_path / "seed-*")]})
  row = versus.row({**SPEC, "digits": 9, "runs": [str(tmp_path / "seed-*")]})
  assert (row["ours_mean"], row["ours_std"], row["seeds"]) == ("", "", "2")
  assert "| 0.97 | – | 2 |" in versus.markdown([row])
  assert versus.row({**SPEC, "runs": [str(tmp_path / "seed-*")]})["ours_mean"] == "0.500000"
  run = _run(tmp_path, "seed-2", 2, 0.5, 10)  # a run that did score the cell
  (run / "config.json").write_text((tmp_path / "seed-0" / "config.json").read_text())
  results = json.loads((run / "eval" / "latest.json").read_text())
  results["add_int"]["per_digit"]["9"] = {"digit_match": 0.25, "exact_match": 0.0}
  (run / "eval" / "latest.json").write_text(json.dumps(results))
  with pytest.raises(versus.SpecError, match="over the context in .*seed-0"):
    versus.row({**SPEC, "digits": 9, "runs": [str(tmp_path / "seed-*")]})


def test_a_run_named_twice_is_refused(tmp_path):
  _run(tmp_path, "seed-0", 0, 0.5, 10)
  _run(tmp_path, "seed-1", 1, 0.25, 10)
  spec = {**SPEC, "runs": [str(tmp_path / "seed-*"), str(tmp_path / "seed-0")]}
  with pytest.raises(versus.SpecError, match="seed-0 named more than once"):
    versus.row(spec)



@pytest.mark.parametrize("spec", PUBLISHED, ids=lambda p: p.parent.name)
def test_each_published_table_is_what_its_runs_give(spec, tmp_path, monkeypatch):
  """Every committed paper_vs_ours.csv is regenerated from its spec and the committed runs:
  a run added, moved or re-evaluated without the table being rewritten fails here."""
  monkeypatch.chdir(ROOT)  # the spec names run folders from the repository root
  out = tmp_path / "paper_vs_ours.csv"
  assert versus.main(["--spec", str(spec), "--out", str(out)]) == 0
  assert out.read_text() == (spec.parent / "paper_vs_ours.csv").read_text()


@pytest.mark.parametrize("table, evaluation", [
    ("decoding_sampled.csv", []),
    ("decoding_greedy.csv", ["--evaluation", "eval/evaluations/*_greedy_*.json"]),
])
def test_the_published_decoding_tables_are_what_their_runs_give(table, evaluation, tmp_path,
                                                                monkeypatch):
  """small_dataset's sampled-against-greedy tables, regenerated from decoding.json."""
  monkeypatch.chdir(ROOT)
  folder = ROOT / "docs" / "results" / "small_dataset"
  out = tmp_path / table
  assert versus.main(["--spec", str(folder / "decoding.json"), "--out", str(out),
                      *evaluation]) == 0
  assert out.read_text() == (folder / table).read_text()


def test_the_published_tables_are_found():
  assert {p.parent.name for p in PUBLISHED} >= {"rope_perf", "rev_vs_pad", "small_dataset",
                                                "small_model"}
