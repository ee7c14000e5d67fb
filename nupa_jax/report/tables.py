"""Paper-style tables as markdown (to read on GitHub) and CSV (to compute with).

CSV cells hold the full-precision values from the JSON they come from (Python's shortest
round-trip repr), so a CSV read back gives the evaluator's numbers exactly; markdown rounds to
three decimals for reading. Missing values are empty cells in both.
"""
import csv
import math
import pathlib
from typing import Any

from nupa_jax.report import scales
from nupa_jax.report.grouping import Group
from nupa_jax.report.loading import BUCKETS, METRICS, Entry
from nupa_jax.report.series import (LOSS_SPLITS, PPD, WLD, bucket_band, curve_series,
                                    digit_series, digits_band, loss_series)

Row = list[Any]
DIGIT_COLUMNS = [f"{short}_{m}" for m in METRICS for short in ("wld", "ppd")]


def _missing(value: Any) -> bool:
  return value is None or (isinstance(value, float) and math.isnan(value))


def _md_cell(value: Any) -> str:
  if _missing(value):
    return ""
  if isinstance(value, float):
    return str(int(value)) if value.is_integer() else f"{value:.3f}"
  return str(value).replace("|", "\\|")


def markdown(header: list[str], rows: list[Row]) -> str:
  lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |",
           "|" + "|".join(" --- " for _ in header) + "|"]
  lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in rows]
  return "\n".join(lines) + "\n"


def write_csv(path: pathlib.Path, header: list[str], rows: list[Row]) -> pathlib.Path:
  with path.open("w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(header)
    writer.writerows([["" if _missing(v) else repr(v) if isinstance(v, float) else v
                       for v in row] for row in rows])
  return path


def _bucket_rows(entry: Entry) -> list[Row]:
  return [[task, b] + [result.buckets[b][m] for m in METRICS] + [result.buckets[b]["n"]]
          for task, result in entry.final.tasks.items() for b in BUCKETS if b in result.buckets]


def _digit_rows(entry: Entry) -> list[Row]:
  return [[task] + [getattr(result, "well_learned" if short == "wld" else "preserving").get(m)
                    for m in METRICS for short in ("wld", "ppd")]
          for task, result in entry.final.tasks.items()]


def run_tables(entries: list[Entry], out: pathlib.Path) -> dict[str, pathlib.Path]:
  """Per run and task: S/M/L/XL means of the three metrics, and wld / ppd per metric."""
  bucket_header = ["task", "bucket", *METRICS, "n"]
  digit_header = ["task", *DIGIT_COLUMNS]
  text = ["# Per-run results\n",
          "S/M/L/XL means of the final evaluation; wld / ppd = well-learned / "
          "performance-preserving digits (paper A.1.7).\n"]
  for entry in entries:
    step = f", step {entry.final.step}" if entry.final.step is not None else ""
    text += [f"## {entry.name}\n", f"`{entry.final.source}`{step}\n",
             markdown(bucket_header, _bucket_rows(entry)),
             markdown(digit_header, _digit_rows(entry))]
  md = out / "runs.md"
  md.write_text("\n".join(text))
  return {
      "markdown": md,
      "buckets_csv": write_csv(out / "runs_buckets.csv", ["run", *bucket_header],
                               [[e.name, *r] for e in entries for r in _bucket_rows(e)]),
      "digits_csv": write_csv(out / "runs_digits.csv", ["run", *digit_header],
                              [[e.name, *r] for e in entries for r in _digit_rows(e)]),
  }


def all_tasks(groups: list[Group]) -> list[str]:
  return list(dict.fromkeys(t for g in groups for t in g.tasks))


def comparison_rows(groups: list[Group], metric: str) -> list[Row]:
  """(task, row, one median per group): buckets S..XL, then wld and ppd of `metric`."""
  rows = []
  for task in all_tasks(groups):
    for bucket in BUCKETS:
      values = [bucket_band(g, task, bucket, metric).median if task in g.tasks else None
                for g in groups]
      if not all(_missing(v) for v in values):
        rows.append([task, bucket, *values])
    for short, which in (("wld", WLD), ("ppd", PPD)):
      rows.append([task, short, *[digits_band(g, task, which, metric).median if task in g.tasks
                                  else None for g in groups]])
  return rows


def comparison_table(groups: list[Group], metric: str,
                     out: pathlib.Path) -> tuple[str, dict[str, pathlib.Path]]:
  """Runs side by side (seeds: median); returns the markdown and the files written."""
  rows = comparison_rows(groups, metric)
  shown = [g.label if len(g.entries) == 1 else f"{g.label} (median of {g.replicas})"
           for g in groups]
  text = markdown(["task", "", *shown], rows)
  md = out / f"comparison_{metric}.md"
  md.write_text(f"# Comparison: {scales.get(metric).title}\n\n{text}")
  return text, {"markdown": md, "csv": write_csv(out / f"comparison_{metric}.csv",
                                                 ["task", "row", *[g.label for g in groups]],
                                                 rows)}


def series_tables(groups: list[Group], metric: str,
                  out: pathlib.Path) -> dict[str, pathlib.Path]:
  """The data behind the figures: per-digit final results, training curves and losses, with
  bands."""
  stats = ["median", "min", "max", "seeds"]
  digits = [[g.label, task, d, b.median, b.lo, b.hi, b.n]
            for g in groups for task in g.tasks for d, b in digit_series(g, task, metric)]
  curves = [[g.label, task, d, step, seen, b.median, b.lo, b.hi, b.n]
            for g in groups for task in g.tasks
            for step, seen, bands in curve_series(g, task, metric) for d, b in bands.items()]
  losses = [[g.label, split, step, seen, b.median, b.lo, b.hi, b.n]
            for split in LOSS_SPLITS for g in groups
            for step, seen, b in loss_series(g, split)]
  return {
      "digits_csv": write_csv(out / f"digits_{metric}.csv", ["line", "task", "digits", *stats],
                              digits),
      "curves_csv": write_csv(out / f"curves_{metric}.csv",
                              ["line", "task", "digits", "step", "samples_seen", *stats], curves),
      "losses_csv": write_csv(out / "losses.csv",
                              ["line", "loss", "step", "samples_seen", *stats], losses),
  }
