"""Reading workdirs, sweeps and REPORT.json files, and the errors bad inputs give."""
import json
import pathlib

import pytest

from nupa_jax import metrics
from nupa_jax.report.loading import ReportError, load, load_workdir
from nupa_jax.report.trained import train_ranges
from report_synthetic import make_report_json, make_run, write_json


def quiet(_):
  pass


def test_workdir_final_history_and_config(tmp_path):
  run = make_run(tmp_path / "r", pe="alibi", tasks=("add_int", "add_float"), steps=(100, 200))
  entry = load_workdir(run)
  latest = json.loads((run / "eval" / "latest.json").read_text())
  assert entry.kind == "run" and entry.name == "r"
  assert entry.final.step == 200 and list(entry.final.tasks) == ["add_int", "add_float"]
  assert [e.step for e in entry.history] == [100, 200]
  assert [e.samples_seen for e in entry.history] == [3200, 6400]
  got = entry.final.tasks["add_float"]
  want = latest["add_float"]
  assert got.per_digit[7]["digit_match"] == want["per_digit"]["7"]["digit_match"]
  assert got.buckets["XL"]["dlength"] == want["XL"]["dlength"]
  assert got.well_learned["exact_match"] == want["well_learned_digits"]["exact_match"]
  assert got.preserving["digit_match"] == want["performance_preserving_digits"]["digit_match"]
  assert entry.config["model.posenc.name"] == "alibi"
  assert entry.config["data.tasks"] == {"add_int": 1.0, "add_float": 1.0}  # kept whole
  assert "workdir" not in entry.config
  assert entry.train_digits == {"add_int": (1, 8), "add_float": (1, 8)}


def test_samples_seen_from_train_metrics(tmp_path):
  """Evals without `_meta.samples_seen` get it from train_metrics.jsonl (logged every 10 steps
  at 32 samples per step), interpolated between logged steps; events are skipped."""
  run = make_run(tmp_path / "r", steps=(100, 205), samples_in_meta=False)
  with (run / "train_metrics.jsonl").open("a") as f:
    f.write('{"step": 210, "samples_')  # torn last line of a killed run
  entry = load_workdir(run)
  assert [(e.step, e.samples_seen) for e in entry.history] == [(100, 3200), (205, 205 * 32)]


def test_trained_ranges_follow_the_data_config():
  """Which evaluated tasks were trained on which lengths, by nupa_jax.data's rules."""
  evaluated = ["add_int", "max_int", "multiply_hard_int"]
  assert train_ranges({"data.tasks": {"add_int": 1.0}, "data.train_digits": [1, 8]},
                      evaluated) == {"add_int": (1, 8)}  # max_int was only evaluated
  mixed = {"data.tasks": {"all": 1.0}, "data.train_digits": [1, 20],
           "data.task_digits": {"max_int": [1, 100]}}
  assert train_ranges(mixed, evaluated) == {"add_int": (1, 20), "max_int": (1, 100),
                                            "multiply_hard_int": (1, 20)}
  aliases = {"data.tasks": {"multiply_int": 1.0, "max_Integer_Integer_Integer": 1.0},
             "data.train_digits": {"*": [1, 8], "max_int": [2, 30]}}
  assert train_ranges(aliases, evaluated) == {"max_int": (2, 30), "multiply_hard_int": (1, 8)}
  with pytest.raises(ValueError, match=r"training range of add_int is \[1\]"):
    train_ranges({"data.tasks": {"add_int": 1.0}, "data.train_digits": [1]}, evaluated)


def test_bad_train_range_names_the_config(tmp_path):
  run = make_run(tmp_path / "r")
  config = json.loads((run / "config.json").read_text())
  config["data"]["train_digits"] = "1-8"
  write_json(run / "config.json", config)
  message = _error([run])
  assert str(run / "config.json") in message and "'1-8'" in message


def test_final_eval_only(tmp_path):
  """latest.json alone is a run; step files alone use the last one as the final eval."""
  only_latest = make_run(tmp_path / "a", steps=(300,))
  (only_latest / "eval" / "step_300.json").unlink()
  entry = load_workdir(only_latest)
  assert entry.final.step == 300 and len(entry.history) == 1
  no_latest = make_run(tmp_path / "b", steps=(100, 200), latest=False)
  entry = load_workdir(no_latest)
  assert entry.final.source.name == "step_200.json" and len(entry.history) == 2


def test_summaries_from_nupa_jax_metrics_load(tmp_path):
  """What `metrics.summarize` writes (the evaluator's and `benchmark score`'s producer) loads;
  buckets without questions (n = 0, null means) are left out rather than drawn as zeros."""
  records = [(d, {"exact_match": float(i % 2), "digit_match": 0.5, "dlength": float(i % 3)})
             for d in (3, 4, 5, 6) for i in range(d)]
  summary = metrics.summarize(records, max_digits=20)
  path = write_json(tmp_path / "REPORT.json", {"add_int": summary, "_meta": {"scored": 18}})
  (entry,) = load([path], quiet)
  result = entry.final.tasks["add_int"]
  assert set(result.buckets) == {"S", "M"}
  s_bucket = [r for r in records if r[0] <= 4]
  assert result.buckets["S"]["dlength"] == pytest.approx(
      sum(r[1]["dlength"] for r in s_bucket) / len(s_bucket))
  assert result.buckets["S"]["n"] == len(s_bucket) == 7
  assert result.per_digit[6]["exact_match"] == pytest.approx(3 / 6)


def test_sweep_folder_without_sweep_json(tmp_path):
  for pe in ("rope", "nope"):
    make_run(tmp_path / "sweep" / pe, pe=pe)
  (tmp_path / "sweep" / "notes").mkdir()  # not a workdir: ignored
  entries = load([tmp_path / "sweep"], quiet)
  assert [e.name for e in entries] == ["nope", "rope"]
  assert all(e.args is None for e in entries)


def test_sweep_json_args_and_failed_runs(tmp_path):
  sweep = tmp_path / "sweep"
  runs = []
  for pe in ("rope", "alibi", "fire"):
    if pe != "fire":
      make_run(sweep / f"pe-{pe}", pe=pe)
    # Workdirs as the launcher saw them: absolute, or relative to where it was started.
    workdir = str(sweep / f"pe-{pe}") if pe == "rope" else f"runs/sweep/pe-{pe}"
    runs.append({"name": f"pe-{pe}", "workdir": workdir, "args": {"pe": pe},
                 "status": "failed" if pe == "fire" else "done"})
  write_json(sweep / "sweep.json", {"config": "configs/pe.py", "grid": {"pe": []},
                                    "runs": runs})
  messages = []
  entries = load([sweep], messages.append)
  assert [(e.name, e.args) for e in entries] == [("pe-rope", {"pe": "rope"}),
                                                 ("pe-alibi", {"pe": "alibi"})]
  assert any("pe-fire" in m and "failed" in m for m in messages)


def test_report_json(tmp_path):
  path = make_report_json(tmp_path / "llm" / "REPORT.json", "llama-3.1-8b")
  (entry,) = load([path], quiet)
  assert entry.kind == "report" and entry.name == "llama-3.1-8b"
  assert list(entry.final.tasks) == ["add_int", "max_int"]  # `_meta` is not a task
  assert entry.final.meta["n_predictions"] == 1000 and entry.history == []


def test_same_run_names_from_two_sweeps_are_told_apart(tmp_path):
  for sweep in ("a", "b"):
    make_run(tmp_path / sweep / "run0")
  names = [e.name for e in load([tmp_path / "a", tmp_path / "b"], quiet)]
  assert names == ["a/run0", "b/run0"]


def test_runs_in_folders_of_the_same_name_are_told_apart_by_the_folders_above(tmp_path):
  for cell in ("x/reverse", "y/reverse", "y/pad"):
    make_run(tmp_path / cell / "runs" / "run0")
  paths = [tmp_path / c / "runs" for c in ("x/reverse", "y/reverse", "y/pad")]
  names = [e.name for e in load(paths, quiet)]
  assert names == ["x/reverse/runs/run0", "y/reverse/runs/run0", "pad/runs/run0"]


def test_report_files_of_one_model_keep_the_model_in_their_names(tmp_path, monkeypatch):
  for folder in ("x", "y"):
    make_report_json(tmp_path / folder / "REPORT.json", "gpt")
  monkeypatch.chdir(tmp_path / "x")  # one input a bare file name: no folder in its path
  names = [e.name for e in load(["REPORT.json", tmp_path / "y" / "REPORT.json"], quiet)]
  assert names == ["x/gpt", "y/gpt"]


def test_a_run_given_twice_is_refused(tmp_path, monkeypatch):
  make_run(tmp_path / "a" / "run0")
  monkeypatch.chdir(tmp_path)
  with pytest.raises(ReportError, match="given twice"):
    load([pathlib.Path("a/run0"), tmp_path / "a" / "run0"], quiet)


def _error(paths: list[pathlib.Path]) -> str:
  with pytest.raises(ReportError) as info:
    load(paths, quiet)
  return str(info.value)


def test_empty_and_missing_inputs(tmp_path):
  (tmp_path / "empty").mkdir()
  message = _error([tmp_path / "empty"])
  assert str(tmp_path / "empty") in message and "empty" in message and "workdir" in message
  assert "does not exist" in _error([tmp_path / "nowhere"])


def test_sweep_without_results(tmp_path):
  (tmp_path / "sweep" / "run0" / "eval").mkdir(parents=True)
  write_json(tmp_path / "sweep" / "run0" / "config.json", {"seed": 0})
  assert "none of its 1 runs has eval results" in _error([tmp_path / "sweep"])
  assert "has no eval results" in _error([tmp_path / "sweep" / "run0"])


def test_unreadable_json_names_the_file(tmp_path):
  run = make_run(tmp_path / "r")
  latest = run / "eval" / "latest.json"
  latest.write_text(latest.read_text()[:50])
  message = _error([run])
  assert str(latest) in message and "not valid JSON" in message


def test_bad_layouts_name_file_and_field(tmp_path):
  run = make_run(tmp_path / "r")
  latest = run / "eval" / "latest.json"
  raw = json.loads(latest.read_text())
  del raw["add_int"]["per_digit"]
  write_json(latest, raw)
  message = _error([run])
  assert str(latest) in message and "'add_int'" in message and "per_digit" in message
  write_json(latest, {"_meta": {"step": 1}})
  assert "no task results" in _error([run])
  raw = json.loads((run / "eval" / "step_200.json").read_text())
  raw["add_int"]["S"]["exact_match"] = "high"
  write_json(latest, raw)
  assert "add_int.S.exact_match is 'high'" in _error([run])


def test_bad_train_metrics_line(tmp_path):
  run = make_run(tmp_path / "r", samples_in_meta=False)
  lines = (run / "train_metrics.jsonl").read_text().splitlines()
  lines[2] = "{oops"
  (run / "train_metrics.jsonl").write_text("\n".join(lines) + "\n")
  assert f"{run / 'train_metrics.jsonl'}:3 is not valid JSON" in _error([run])
