"""`--paper`: each paper table again with our value beside the paper's, read from the runs'
JSON (mean ± sample std over seeds), with missing cells marked and bad tables refused."""
import csv
import json
import math
import pathlib

import pytest

from nupa_jax.report.__main__ import main
from nupa_jax.report.grouping import group_entries
from nupa_jax.report.loading import ReportError, load
from nupa_jax.report.paper import read_paper
from nupa_jax.report.paper_tables import compare
from report_synthetic import make_run, write_json

# pe -> task -> quality of each seed; alibi never ran max_int.
GRID = {"rope": {"add_int": (1.0, 0.6, 0.8), "max_int": (0.9,)},
        "alibi": {"add_int": (0.7,)}}


def quiet(_):
  pass


def make_runs(root: pathlib.Path) -> list[pathlib.Path]:
  """One workdir per (pe, task, seed), a single final eval each (no training curves to draw)."""
  return [make_run(root / f"{pe}-{task}-s{seed}", pe=pe, tasks=(task,), seed=seed,
                   quality=quality, steps=(100,))
          for pe, tasks in GRID.items() for task, qualities in tasks.items()
          for seed, quality in enumerate(qualities)]


def json_values(root: pathlib.Path, pe: str, task: str, digit: int | None = None,
                metric: str = "digit_match", bucket: str | None = None) -> list[float]:
  """The value of each seed of (pe, task), read straight from its eval/latest.json."""
  out = []
  for seed in range(len(GRID[pe][task])):
    result = json.loads((root / f"{pe}-{task}-s{seed}" / "eval" / "latest.json").read_text())
    out.append(result[task][bucket][metric] if bucket else
               result[task]["per_digit"][str(digit)][metric])
  return out


def mean_std(values: list[float]) -> tuple[float, float]:
  """By the textbook formulas: the mean and the sample (n - 1) standard deviation."""
  mean = sum(values) / len(values)
  return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def paper_file(path: pathlib.Path, *tables: dict, source: str = "Paper, 2025") -> pathlib.Path:
  return write_json(path, {"source": source, "tables": list(tables)})


PE_BY_TASK = {"title": "8-digit digit match", "source": "Table 1", "rows": "pe",
              "columns": "task", "metric": "digit_match", "digits": 8,
              "paper": {"rope": {"add_int": 0.97, "max_int": 1.0},
                        "alibi": {"add_int": 0.23, "max_int": None},
                        "fire": {"add_int": 0.5}}}


def read_csv(path: pathlib.Path) -> list[dict[str, str]]:
  with path.open(newline="") as f:
    return list(csv.DictReader(f))


def test_report_puts_the_json_values_beside_the_papers(tmp_path):
  """End to end: the CSV holds the JSON's per-digit values (seed mean and std), the markdown
  shows them with the paper's, and missing runs or paper numbers are marked."""
  runs = make_runs(tmp_path / "runs")
  boundary = {"title": "RoPE at the boundary", "rows": "task", "columns": "digits",
              "metric": "exact_match", "where": {"pe": "rope"},
              "paper": {"add_int": {"8": {"value": 1.0, "pm": 0.0},
                                    "9": {"value": 0.45, "pm": 0.02}}}}
  first = paper_file(tmp_path / "a.json", PE_BY_TASK)
  second = paper_file(tmp_path / "b.json", boundary)
  out = tmp_path / "out"
  assert main(["--workdirs", *map(str, runs), "--out", str(out), "--paper", str(first),
               "--paper", str(second)]) == 0

  rows = {(r["pe"], r["task"]): r for r in read_csv(out / "tables" /
                                                     "paper_8-digit-digit-match.csv")}
  assert list(rows) == [(pe, task) for pe in ("rope", "alibi", "fire")
                        for task in ("add_int", "max_int")]
  root = tmp_path / "runs"
  mean, std = mean_std(json_values(root, "rope", "add_int", 8))
  rope = rows[("rope", "add_int")]
  assert (float(rope["ours_mean"]), float(rope["ours_std"]), rope["ours_n"]) == (
      pytest.approx(mean, abs=1e-15), pytest.approx(std, abs=1e-15), "3")
  assert rope["runs"] == "rope-add_int-s0 rope-add_int-s1 rope-add_int-s2"
  (single,) = json_values(root, "alibi", "add_int", 8)
  assert float(rows[("alibi", "add_int")]["ours_mean"]) == single  # one seed: exactly its value
  assert rows[("alibi", "add_int")]["ours_std"] == ""
  assert (rows[("alibi", "max_int")]["ours_n"], rows[("alibi", "max_int")]["paper"]) == ("0", "")
  assert rows[("fire", "max_int")]["paper"] == "" and rows[("fire", "add_int")]["paper"] == "0.5"

  text = (out / "tables" / "paper_8-digit-digit-match.md").read_text()
  assert text.startswith("# 8-digit digit match\n\nPaper, 2025, Table 1\n")
  assert f"| rope | {mean:.3f} ± {std:.3f} (n=3) | 0.97 | " in text
  assert f"| alibi | {single:.3f} | 0.23 | — | — |" in text
  assert "| fire | — | 0.50 | — | — |" in text  # 0.5 printed to the table's 2 decimals
  assert "no run has pe=fire (the runs have pe: rope, alibi)" in text

  index = (out / "index.md").read_text()
  section = index[index.index("## Side by side with the paper"):index.index("## Tables")]
  assert "### 8-digit digit match" in section and "### RoPE at the boundary" in section
  assert "| task | 8 digits: ours | paper | 9 digits: ours | paper |" in section
  assert "1.00 ± 0.00" in section and "0.45 ± 0.02" in section
  em_mean, em_std = mean_std(json_values(root, "rope", "add_int", 9, "exact_match"))
  assert f"| {em_mean:.3f} ± {em_std:.3f} (n=3) | 0.45 ± 0.02 |" in section
  assert "tables/paper_8-digit-digit-match.csv" in section


def test_bucket_where_and_metric_axis(tmp_path):
  """Read at a bucket, pinned to one pe, with a metric per column."""
  groups = group_entries(load(make_runs(tmp_path), quiet))
  path = paper_file(tmp_path / "p.json", {
      "title": "M bucket", "rows": "task", "columns": "metric", "bucket": "M",
      "where": {"pe": "alibi"},
      "paper": {"add_int": {"exact_match": 0.5, "dlength": 1}, "max_int": {"exact_match": 0.1}}})
  (table,) = read_paper(path)
  comparison = compare(table, groups)
  for metric in ("exact_match", "dlength"):
    (want,) = json_values(tmp_path, "alibi", "add_int", metric=metric, bucket="M")
    assert comparison.ours[("add_int", metric)].mean == want
  assert comparison.ours[("max_int", "exact_match")] is None
  assert comparison.notes == []  # max_int exists, only not for alibi: a "—" cell, no note


def test_sweep_arguments_name_settings(tmp_path):
  """A sweep argument the config does not hold (`lr`) can pick the rows."""
  runs = []
  for lr, quality in (("1e-3", 1.0), ("1e-4", 0.5)):
    make_run(tmp_path / "sweep" / lr, quality=quality, steps=(100,))
    runs.append({"name": lr, "workdir": lr, "args": {"lr": lr}})
  write_json(tmp_path / "sweep" / "sweep.json", {"runs": runs})
  groups = group_entries(load([tmp_path / "sweep"], quiet))
  (table,) = read_paper(paper_file(tmp_path / "p.json", {
      "title": "lr", "rows": "lr", "columns": "digits", "metric": "exact_match",
      "paper": {"1e-3": {"3": 0.9}, "1e-4": {"3": 0.4}}}))
  ours = compare(table, groups).ours
  for lr in ("1e-3", "1e-4"):
    result = json.loads((tmp_path / "sweep" / lr / "eval" / "latest.json").read_text())
    assert ours[(lr, 3)].mean == result["add_int"]["per_digit"]["3"]["exact_match"]


def with_fields(**fields) -> dict:
  return {k: v for k, v in (PE_BY_TASK | fields).items() if v is not None}


BAD_TABLES = [
    (with_fields(rows="rpe"), "unknown setting 'rpe'; known: digits, bucket, metric, task, pe"),
    (with_fields(metric="digit_mtach"), "metric is 'digit_mtach'; expected one of exact_match"),
    (with_fields(digit=8), "unknown field 'digit'; known: title"),
    (with_fields(bucket="M"), "needs exactly one of `digits`"),
    (with_fields(digits=None), "needs exactly one of `digits`"),
    (with_fields(bucket="XXL", digits=None), "bucket key 'XXL' is not one of S, M, L, XL"),
    (with_fields(where={"pe": "nope"}), "`where` pins 'pe', which is also the rows or columns"),
    (with_fields(paper={"rope": {"add_int": "0.97"}}), "row 'rope', column 'add_int': cell"),
    (with_fields(paper={"nope": {"add_int": 0.78}}),
     "matches no run; the runs have pe: rope, alibi; task: add_int, max_int"),
    (with_fields(digits=30), "no value in any cell: (rope, add_int): the runs of pe=rope, "
     "task=add_int have no digit_match at 30 digits"),
    (with_fields(rows="digits", metric="exact_match", digits=None, paper={"8": {"add_int": 1}}),
     "cell (8, add_int) matches runs of 2 settings (pe=rope, task=add_int; pe=alibi, "
     "task=add_int); pin the setting"),
]


@pytest.mark.parametrize("table,message", BAD_TABLES)
def test_bad_tables_exit_2_before_writing(tmp_path, capsys, table, message):
  runs = make_runs(tmp_path / "runs")
  path = paper_file(tmp_path / "p.json", table)
  out = tmp_path / "out"
  with pytest.raises(SystemExit) as exit_info:
    main(["--workdirs", *map(str, runs), "--out", str(out), "--paper", str(path)])
  assert exit_info.value.code == 2
  error = capsys.readouterr().err
  assert f"error: {path}, table 1 ('8-digit digit match')" in error
  assert message in error
  assert not out.exists()


def test_a_table_must_name_the_task_of_a_run_with_several(tmp_path):
  groups = group_entries(load([make_run(tmp_path / "mixed", tasks=("add_int", "max_int"),
                                        steps=(100,))], quiet))
  (table,) = read_paper(paper_file(tmp_path / "p.json", with_fields(
      columns="train_digits", paper={"rope": {"1-8": 0.5}})))
  with pytest.raises(ReportError, match=r"run mixed evaluates add_int, max_int; say which task"):
    compare(table, groups)


def test_bad_files(tmp_path):
  with pytest.raises(ReportError, match=r"expected \{\"source\": \.\.\., \"tables\""):
    read_paper(write_json(tmp_path / "p.json", [PE_BY_TASK]))
  with pytest.raises(ReportError, match="unknown field 'table'; known: source, tables"):
    read_paper(write_json(tmp_path / "p.json", {"table": [], "tables": [PE_BY_TASK]}))


def test_help_documents_the_format(capsys):
  with pytest.raises(SystemExit):
    main(["--help"])
  help_text = capsys.readouterr().out
  assert "--paper FILE.json" in help_text
  assert '"paper": {"rope": {"add_int": 0.97' in help_text and "`where`" in help_text
