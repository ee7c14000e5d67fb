"""`python -m nupa_jax.report.learned_digits`: our well-learned / performance-preserving digits
beside the paper's tables of them, as `versus`' paper_vs_ours.csv rows.

    python -m nupa_jax.report.learned_digits \\
        --paper docs/results/generalist/paper_learned_digits.json \\
        --runs 'docs/results/generalist/runs/*' --out docs/results/generalist/paper_vs_ours.csv \\
        [--table tab:well_learned_digit] [--models Llama-3.1-8B-ft GPT-4o] [--markdown T.md]
        [--wide W.md] [--ours_label 'ours (0.1B)'] [--evaluation 'eval/evaluations/*_greedy_*.json']

The paper file holds the appendix tables "Well-learned digits / performance-preserving digits
of models tested on NUPA Test" (`tables[label].values[metric][model][task]`, each table scored
by one metric, `scored_metric`), the rules the paper computed them with (`rules`) and `flags`:
table blocks whose rows repeat another block's verbatim. Each CSV row is one paper model row
(`setting`, its number in `paper`), task of the table and metric (`well_learned_digits` or
`performance_preserving_digits`; `digits` empty); `ours_mean` / `ours_std` are the mean and
sample deviation over the runs of `eval/latest.json[task][metric][scored_metric]` (or of
`--evaluation`'s file), the other columns as in `versus`. A cell of a flagged block has an
empty `paper`: the printed number is not that task's.

`--wide` writes the table in the paper's own shape, turned (a row per task, a column per
paper model and one for our runs, each cell `well-learned / performance-preserving`), so our
row sits among the paper's; a flagged task's paper cells are `–`.

Our digits must have been computed by the paper's rules, so that `ours_mean` is what the runs'
files say and compares with the paper's: a results file whose tasks record another
`learned_digits_rule` (or, for the dlength table, `dlength_rule`) is an error naming the fix.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

from nupa_jax import cli
from nupa_jax import metrics
from nupa_jax import paths
from nupa_jax.report import loading
from nupa_jax.report import versus
from nupa_jax.report.versus import SpecError

LEVEL_METRICS = tuple(f"{level}_digits" for level in metrics.LEVELS)
MAIN_TABLE = "tab:well_learned_digit"  # the exact-match table


def read_paper(path: pathlib.Path) -> dict:
  """The paper file, checked for what `rows` reads."""
  raw = loading.read_json(path)
  if not isinstance(raw, dict) or not isinstance(raw.get("tables"), dict) or not isinstance(
      raw.get("rules"), dict):
    raise SpecError(f"{path}: expected {{\"rules\": {{...}}, \"tables\": {{label: {{"
                    "\"scored_metric\", \"blocks\", \"models\", \"values\"}}}}, \"flags\": [...]}}")
  for label, table in raw["tables"].items():
    if table.get("scored_metric") not in metrics.METRICS or set(
        table.get("values", {})) != set(LEVEL_METRICS):
      raise SpecError(f"{path}: table {label} needs a scored_metric of "
                      f"{', '.join(metrics.METRICS)} and values of {', '.join(LEVEL_METRICS)}")
  return raw


def flagged_tasks(paper: dict, table: str) -> set[str]:
  """The tasks of `table` whose printed numbers repeat another block's."""
  return {t for flag in paper.get("flags", []) if flag["table"] == table for t in flag["tasks"]}


def _required_rules(paper: dict, scored_metric: str) -> dict[str, str]:
  rules = {"learned_digits_rule": paper["rules"]["learned_digits_rule"]}
  if scored_metric == "dlength":
    rules["dlength_rule"] = paper["rules"]["dlength_rule"]
  return rules


def _our_value(results: dict, path: paths.Path, task: str, metric: str, scored_metric: str,
               required: dict[str, str]) -> float:
  summary = results.get(task)
  if not isinstance(summary, dict) or scored_metric not in summary.get(metric, {}):
    raise SpecError(f"{path} has no {task} / {metric} / {scored_metric}")
  recorded = metrics.rules_of(summary)
  for name, rule in required.items():
    if recorded[name] != rule:
      fix = (f"rescore with python -m nupa_jax.evaluation.relearn --rule {rule} {path}"
             if name == "learned_digits_rule" else
             f"evaluate again with config.eval.dlength_rule={rule}")
      raise SpecError(f"{path}: {task}'s digits were computed with {name} {recorded[name]!r}, "
                      f"the paper's with {rule!r}; {fix}")
  return float(summary[metric][scored_metric])


def rows(paper: dict, run_patterns: list[str], table: str = MAIN_TABLE,
         models: list[str] | None = None, evaluation: str | None = None) -> list[dict]:
  """CSV rows (`versus.COLUMNS` -> text) of `table` for the paper's `models` (default: all)."""
  if table not in paper["tables"]:
    raise SpecError(f"the paper file has no table {table!r}; known: "
                    f"{', '.join(paper['tables'])}")
  spec = paper["tables"][table]
  unknown = [m for m in models or () if m not in spec["models"]]
  if unknown:
    raise SpecError(f"{table} has no model row {unknown[0]!r}; known: "
                    f"{', '.join(spec['models'])}")
  runs = versus.run_folders(run_patterns, table)
  files = [versus.results_file(r, evaluation) for r in runs]
  results = versus.read_results(files)
  samples = [versus.samples_seen(r, f) for r, f in zip(results, files)]
  required = _required_rules(paper, spec["scored_metric"])
  flagged = flagged_tasks(paper, table)
  out = []
  for task in (t for block in spec["blocks"] for t in block):
    for metric in LEVEL_METRICS:
      values = [_our_value(r, f, task, metric, spec["scored_metric"], required)
                for r, f in zip(results, files)]
      ours = versus.ours(runs, values, samples)
      for model in models or spec["models"]:
        paper_value = None if task in flagged else spec["values"][metric][model][task]
        out.append({"paper_table": table, "setting": model, "task": task, "digits": "",
                    "metric": metric, "paper": versus.paper_text(paper_value), **ours})
  return out


def wide_markdown(rows_: list[dict], ours_label: str = "ours") -> str:
  """`rows` (of one table) as a row per task and a column per paper model, then ours; each cell
  `wld / ppd`, ours as run means (to one decimal where they are not whole)."""
  models = list(dict.fromkeys(r["setting"] for r in rows_))
  cells: dict[tuple[str, str], dict[str, str]] = {}
  for r in rows_:
    cells.setdefault((r["task"], r["setting"]), {})[r["metric"]] = r["paper"] or "–"
    cells.setdefault((r["task"], ours_label), {})[r["metric"]] = _mean_text(r["ours_mean"])
  lines = ["| task | " + " | ".join(models + [ours_label]) + " |",
           "|---" * (len(models) + 2) + "|"]
  for task in dict.fromkeys(r["task"] for r in rows_):
    values = [" / ".join(cells[task, m][metric] for metric in LEVEL_METRICS)
              for m in models + [ours_label]]
    lines.append(f"| {task} | " + " | ".join(values) + " |")
  return "\n".join(lines) + "\n"


def _mean_text(mean: str) -> str:
  value = float(mean)
  return f"{value:.0f}" if value == round(value) else f"{value:.1f}"


def main(argv: list[str] | None = None) -> int:
  parser = cli.ArgumentParser(prog="python -m nupa_jax.report.learned_digits",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--paper", required=True, type=pathlib.Path, help="the paper's tables")
  parser.add_argument("--runs", required=True, nargs="+", help="run folders or glob patterns")
  parser.add_argument("--out", required=True, type=pathlib.Path, help="the CSV to write")
  parser.add_argument("--table", default=MAIN_TABLE, help="the paper table's label")
  parser.add_argument("--models", nargs="+", help="the paper's model rows (default: all)")
  parser.add_argument("--markdown", type=pathlib.Path, help="also write the rows as Markdown")
  parser.add_argument("--wide", type=pathlib.Path,
                      help="also write the paper's table shape with our column, as Markdown")
  parser.add_argument("--ours_label", default="ours", help="our column's heading in --wide")
  parser.add_argument("--evaluation", help="results file inside each run, as a glob pattern "
                                           "(default: eval/latest.json)")
  args = parser.parse_args(argv)
  with cli.usage_errors(SpecError, loading.ReportError, *cli.PATH_ERRORS):
    out = rows(read_paper(args.paper), args.runs, args.table, args.models, args.evaluation)
    versus.write(out, args.out)
    if args.markdown:
      args.markdown.write_text(versus.markdown(out))
    if args.wide:
      args.wide.write_text(wide_markdown(out, args.ours_label))
  print(f"{len(out)} rows -> {args.out}", file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main())
