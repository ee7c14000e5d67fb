"""`python -m nupa_jax.report` end to end on a sweep, a final-eval-only run and a REPORT.json:
the files exist, every link of index.md resolves, and the CSVs hold the JSONs' numbers."""
import csv
import json
import math
import os
import pathlib
import re
import statistics
import subprocess
import sys

import pytest

from nupa_jax.report.__main__ import main
from report_synthetic import make_report_json, make_run, write_json

ROOT = pathlib.Path(__file__).resolve().parents[2]
METRICS = ("exact_match", "digit_match", "dlength")
PE_SEEDS = {"rope": (1.0, 0.6), "alibi": (0.9, 0.7)}  # quality per seed


def make_inputs_and_report(root: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
  """A pe x seed sweep with sweep.json, a mixed run with only latest.json, an LLM's scores."""
  runs = []
  for pe, qualities in PE_SEEDS.items():
    for seed, quality in enumerate(qualities):
      name = f"{pe}-s{seed}"
      make_run(root / "sweep" / name, pe=pe, seed=seed, quality=quality, steps=(100, 200, 300))
      runs.append({"name": name, "workdir": name, "args": {"pe": pe, "seed": seed},
                   "status": "done"})
  write_json(root / "sweep" / "sweep.json",
             {"config": "configs/pe.py", "grid": {"pe": list(PE_SEEDS), "seed": [0, 1]},
              "runs": runs})
  mixed = make_run(root / "mixed", tasks=("add_int", "max_int"), steps=(500,))
  (mixed / "eval" / "step_500.json").unlink()  # no periodic evals: final eval only
  make_report_json(root / "llm" / "REPORT.json", "llama-3.1-8b")
  out = root / "out"
  assert main(["--workdirs", str(root / "sweep"), str(mixed), str(root / "llm" / "REPORT.json"),
               "--out", str(out)]) == 0
  return root, out


def read_csv(path: pathlib.Path) -> list[dict[str, str]]:
  with path.open(newline="") as f:
    return list(csv.DictReader(f))


def number(cell: str) -> float:
  return math.nan if cell == "" else float(cell)


# Sweep runs carry grid args, the mixed run does not, so lines are named by config differences.
LINES = {"rope": "pe=rope, task=add_int", "alibi": "pe=alibi, task=add_int"}
MIXED = "pe=rope, task=add_int+max_int"


def check_expected_files_and_index_links(report):
  _, out = report
  figures = {p.name for p in (out / "figures").iterdir()}
  for stem in ("digits_exact_match", "losses", "curves_exact_match_pe-rope-task-add_int",
               "curves_exact_match_pe-alibi-task-add_int", "heatmap_exact_match_llama-3.1-8b"):
    assert {f"{stem}.png", f"{stem}.svg"} <= figures
  assert (out / "figures" / "digits_exact_match.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  assert b"<svg" in (out / "figures" / "digits_exact_match.svg").read_bytes()[:1000]
  index = (out / "index.md").read_text()
  links = re.findall(r"\]\(([^)]+)\)", index)
  assert len(links) >= 12
  assert all((out / link).is_file() for link in links), links
  for table in ("runs.md", "runs_buckets.csv", "runs_digits.csv", "comparison_exact_match.md",
                "comparison_exact_match.csv"):
    assert f"tables/{table}" in index


def check_final_eval_only_run_gets_its_figures(report):
  """The mixed run has no periodic evals: no training curves, but its line in the digit figure,
  its heatmap, its rows in the tables, and a note in the index."""
  _, out = report
  figures = {p.name for p in (out / "figures").iterdir()}
  assert "heatmap_exact_match_pe-rope-task-add_int-max_int.png" in figures
  assert not any(f.startswith("curves_exact_match_pe-rope-task-add_int-max_int") for f in figures)
  digits = read_csv(out / "tables" / "digits_exact_match.csv")
  assert {r["task"] for r in digits if r["line"] == MIXED} == {"add_int", "max_int"}
  assert f"No periodic evals (final eval only): {MIXED}, llama-3.1-8b." in (
      (out / "index.md").read_text())
  assert "mixed" in {row["run"] for row in read_csv(out / "tables" / "runs_buckets.csv")}


def _final_jsons(root: pathlib.Path) -> dict[str, dict]:
  runs = {p.name: p / "eval" / "latest.json" for p in (root / "sweep").iterdir() if p.is_dir()}
  runs["mixed"] = root / "mixed" / "eval" / "latest.json"
  runs["llama-3.1-8b"] = root / "llm" / "REPORT.json"
  return {name: json.loads(path.read_text()) for name, path in runs.items()}


def check_run_tables_equal_the_json(report):
  root, out = report
  finals = _final_jsons(root)
  rows = read_csv(out / "tables" / "runs_buckets.csv")
  expected = {(run, task, b) for run, data in finals.items() for task in data
              if not task.startswith("_") for b in ("S", "M", "L", "XL")}
  assert {(r["run"], r["task"], r["bucket"]) for r in rows} == expected
  for r in rows:
    bucket = finals[r["run"]][r["task"]][r["bucket"]]
    assert [float(r[m]) for m in METRICS] == [bucket[m] for m in METRICS]
    assert int(r["n"]) == bucket["n"]
  for r in read_csv(out / "tables" / "runs_digits.csv"):
    task = finals[r["run"]][r["task"]]
    for m in METRICS:
      assert int(r[f"wld_{m}"]) == task["well_learned_digits"][m]
      assert int(r[f"ppd_{m}"]) == task["performance_preserving_digits"][m]


def check_comparison_is_the_seed_median(report):
  root, out = report
  finals = _final_jsons(root)
  rows = {(r["task"], r["row"]): r for r in read_csv(out / "tables" / "comparison_exact_match.csv")}
  for pe, qualities in PE_SEEDS.items():
    seeds = [finals[f"{pe}-s{s}"]["add_int"] for s in range(len(qualities))]
    for bucket in ("S", "M", "L", "XL"):
      want = statistics.median(s[bucket]["exact_match"] for s in seeds)
      assert float(rows[("add_int", bucket)][LINES[pe]]) == pytest.approx(want, abs=1e-15)
  llama = finals["llama-3.1-8b"]["max_int"]
  assert float(rows[("max_int", "XL")]["llama-3.1-8b"]) == llama["XL"]["exact_match"]
  assert float(rows[("max_int", "ppd")]["llama-3.1-8b"]) == (
      llama["performance_preserving_digits"]["exact_match"])
  assert rows[("max_int", "S")][LINES["rope"]] == ""  # the sweep did not evaluate max_int
  dlength = {(r["task"], r["row"]): r for r in read_csv(out / "tables" / "comparison_dlength.csv")}
  assert float(dlength[("add_int", "M")][MIXED]) == finals["mixed"]["add_int"]["M"]["dlength"]


def check_figure_data_has_seed_median_min_max(report):
  root, out = report
  finals = _final_jsons(root)
  for row in read_csv(out / "tables" / "digits_exact_match.csv"):
    if row["line"] != LINES["alibi"]:
      continue
    values = [finals[f"alibi-s{s}"]["add_int"]["per_digit"][row["digits"]]["exact_match"]
              for s in (0, 1)]
    assert [number(row[k]) for k in ("median", "min", "max")] == pytest.approx(
        [statistics.median(values), min(values), max(values)], abs=1e-15)
    assert row["seeds"] == "2"
  curves = read_csv(out / "tables" / "curves_exact_match.csv")
  assert {(r["line"], int(r["step"]), float(r["samples_seen"])) for r in curves
          if r["digits"] == "5"} == {
              (LINES[pe], step, 32 * step) for pe in PE_SEEDS for step in (100, 200, 300)}


def test_report_end_to_end(tmp_path, capsys):
  """One report build checked from every side (drawing is the slow part: build it once)."""
  report = make_inputs_and_report(tmp_path)
  progress = capsys.readouterr().err  # digits, losses, 2 training curves, 2 heatmaps
  assert "[report] 6 runs in 4 settings" in progress and "figure 6/6: heatmap" in progress
  check_expected_files_and_index_links(report)
  check_final_eval_only_run_gets_its_figures(report)
  check_run_tables_equal_the_json(report)
  check_comparison_is_the_seed_median(report)
  check_figure_data_has_seed_median_min_max(report)


def test_dlength_report_and_user_labels(tmp_path):
  path = make_report_json(tmp_path / "REPORT.json", "gpt")
  assert main(["--workdirs", str(path), "--out", str(tmp_path / "out"), "--metric", "dlength",
               "--labels", "GPT-4o"]) == 0
  rows = read_csv(tmp_path / "out" / "tables" / "comparison_dlength.csv")
  want = json.loads(path.read_text())["add_int"]["L"]["dlength"]
  assert [float(r["GPT-4o"]) for r in rows if r["task"] == "add_int" and r["row"] == "L"] == [want]
  svg = tmp_path / "out" / "figures" / "heatmap_dlength_GPT-4o.svg"
  first = svg.read_bytes()
  assert main(["--workdirs", str(path), "--out", str(tmp_path / "out"), "--metric", "dlength",
               "--labels", "GPT-4o"]) == 0
  assert svg.read_bytes() == first  # no date or random ids: reruns leave the docs unchanged


def test_cli_errors_name_the_input(tmp_path):
  (tmp_path / "empty").mkdir()
  result = subprocess.run(
      [sys.executable, "-m", "nupa_jax.report", "--workdirs", str(tmp_path / "empty"),
       "--out", str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT,
      env=os.environ | {"PYTHONPATH": str(ROOT)})
  assert result.returncode == 2
  assert f"error: {tmp_path / 'empty'} is empty" in result.stderr
  assert not (tmp_path / "out").exists()


def test_report_reads_a_re_evaluation_file(tmp_path):
  """`nupa_jax.evaluate` writes eval/evaluations/*.json in the trainer's layout: the report takes
  such a file as it takes a `benchmark score` report, and tabulates its numbers."""
  root = pathlib.Path(__file__).resolve().parents[2]
  evaluation = (root / "docs/results/small_dataset/runs/task-add_int_pe-rope_seed-0/eval/"
                "evaluations/step_3907_greedy_200q.json")
  expected = json.loads(evaluation.read_text())["add_int"]["per_digit"]["8"]["exact_match"]
  assert main(["--workdirs", str(evaluation), "--out", str(tmp_path)]) == 0
  assert "step_3907_greedy_200q" in (tmp_path / "index.md").read_text()
  with open(tmp_path / "tables" / "digits_exact_match.csv") as f:
    rows = [r for r in csv.DictReader(f) if r.get("digits") == "8"]
  assert len(rows) == 1 and math.isclose(float(rows[0]["median"]), expected)
