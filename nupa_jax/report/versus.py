"""`python -m nupa_jax.report.versus`: the paper's numbers beside ours, as one CSV per experiment.

    python -m nupa_jax.report.versus --spec docs/results/small_dataset/versus.json \\
        --out docs/results/small_dataset/paper_vs_ours.csv [--markdown TABLE.md]
        [--evaluation 'eval/evaluations/*_greedy_*.json']

The spec is a JSON list of rows, each naming the paper's cell and the runs that answer it:

    {"paper_table": "tab:small_dataset_full", "setting": "rope", "task": "add_int",
     "digits": 8, "metric": "digit_match", "paper": 0.97,
     "runs": ["docs/results/small_dataset/runs/task-add_int_pe-rope_seed-*"]}

(`runs`: folders or glob patterns, relative to the current directory, or `gs://` run folders
without patterns; `paper`: null where the paper gives no number). Each CSV row has the columns
of `COLUMNS`: `ours_mean` / `ours_std` are the mean and sample standard deviation (empty for
one run) of the runs' `eval/latest.json[task]["per_digit"][digits][metric]`, `seeds` the
number of distinct seeds, `samples_per_run` the samples each run had seen at the checkpoint
its results file scores (`_meta.samples_seen`, `;`-joined where the runs differ; not the
training log's last line, which a stop checkpoint saved between two log lines, or a
re-evaluation of an earlier checkpoint, does not match), `runs` the run folders.
`--evaluation` reads another results file of each run (the first match of the pattern inside
it, e.g. a greedy re-evaluation) instead of `eval/latest.json`. A run without the cell is an
error: a row never averages fewer runs than it names. The one exception is a cell whose every
test question was over the run's context (an RF-CoT trace that does not fit, the paper's "–"):
the results file then lacks the length (or the whole task) though the length is inside the
run's evaluated range (`config.eval.task_digits[task]`, else `config.eval.digits`), and counts
the task under `_meta.skipped_over_context`; where that holds for every run the row's
`ours_mean` and `ours_std` are empty.
"""
from __future__ import annotations

import argparse
import csv
import decimal
import glob
import json
import pathlib
import statistics
import sys

from nupa_jax import cli
from nupa_jax import paths
from nupa_jax.evaluation import positions as positions_lib
from nupa_jax.evaluation import settings as eval_settings
from nupa_jax.report import loading

COLUMNS = ("paper_table", "setting", "task", "digits", "metric", "paper", "ours_mean",
           "ours_std", "seeds", "samples_per_run", "runs")
METRICS = ("exact_match", "digit_match", "dlength")


class SpecError(ValueError):
  """A spec row that cannot be computed; the message names the row and the fix."""


def run_folders(patterns: list[str], where: str) -> list[str]:
  """The run folders that `patterns` (folders or glob patterns) name, in order."""
  folders = []
  for pattern in patterns:
    found = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
    found = [f for f in found if paths.path(f).is_dir()]  # a local folder or a gs:// URL
    if not found:
      raise SpecError(f"{where}: no run folder matches {pattern!r}")
    folders += [f.rstrip("/") for f in found]
  twice = sorted({f for f in folders if folders.count(f) > 1})
  if twice:  # it would weigh one run as two in the mean
    raise SpecError(f"{where}: {', '.join(twice)} named more than once; name each run once")
  return folders


def results_file(run: str, evaluation: str | None) -> paths.Path:
  """`eval/latest.json` of `run`, or the first file inside it matching `evaluation`."""
  if evaluation is None:
    return paths.path(run) / "eval" / "latest.json"
  matches = sorted(paths.path(run).glob(evaluation))
  if not matches:
    raise SpecError(f"{run} has no results file matching {evaluation!r}")
  return matches[0]


def read_results(files: list[paths.Path]) -> list[dict]:
  """The results files' contents; a SpecError for one scored at position ids other than 0, 1,
  2, ... (`_meta.positions`: a diagnostic, not the protocol of the paper's tables)."""
  out = []
  for path in files:
    results = loading.read_json(path)
    positions = results.get("_meta", {}).get("positions", positions_lib.DEFAULT_RULE)
    if positions != positions_lib.DEFAULT_RULE:
      raise SpecError(f"{path} was scored at {positions!r} position ids (_meta.positions), "
                      "the paper's tables at consecutive ones: name a results file scored "
                      "at consecutive ids")
    out.append(results)
  return out


def samples_seen(results: dict, path: paths.Path) -> int:
  """The samples behind a results file's numbers: the count of the checkpoint it scored, which
  the trainer and `nupa_jax.evaluate` both record (the training log's last line can be another
  checkpoint's)."""
  seen = results.get("_meta", {}).get("samples_seen")
  if seen is None:
    raise SpecError(f"{path} has no _meta.samples_seen: evaluate the checkpoint again with "
                    "python -m nupa_jax.evaluate, which records it")
  return int(seen)


def _value(run: str, results: dict, path: paths.Path, task: str, digits: int,
           metric: str) -> float | None:
  """The run's number for the cell, from its results file (`results`, read from `path`); None
  where every question of the cell was over the context."""
  per_digit = results.get(task, {}).get("per_digit", {})
  if (str(digits) not in per_digit and _evaluated(run, task, digits)
      and task in results.get("_meta", {}).get("skipped_over_context", {})):
    return None
  try:
    return float(per_digit[str(digits)][metric])
  except KeyError:
    raise SpecError(f"{path} has no {task} / {digits} digits / {metric}") from None


def _evaluated(run: str, task: str, digits: int) -> bool:
  """Whether the run's evaluation scores `task` at `digits` (the evaluator's own rule): a
  length it never tested is missing because of a typo in the spec, not a trace over the
  context."""
  evaluation = json.loads((paths.path(run) / "config.json").read_text()).get("eval", {})
  return digits in eval_settings.task_lengths(
      task, evaluation.get("digits", eval_settings.Eval.digits), evaluation.get("task_digits"))


def ours(runs: list[str], values: list[float | None], samples: list[int]) -> dict:
  """The columns of a row that describe our runs, from one value per run (all None: the cell
  was over every run's context) and the samples behind each (`samples_seen`)."""
  if None in values and set(values) != {None}:
    over = [r for r, v in zip(runs, values) if v is None]
    raise SpecError(f"the cell was over the context in {', '.join(over)} but not in the "
                    "other runs; a row compares runs that scored the same questions")
  seeds = {json.loads((paths.path(r) / "config.json").read_text()).get("seed") for r in runs}
  samples = list(dict.fromkeys(samples))
  scored = None not in values
  return {
      "ours_mean": f"{statistics.fmean(values):.6f}" if scored else "",
      "ours_std": f"{statistics.stdev(values):.6f}" if scored and len(values) > 1 else "",
      "seeds": str(len(seeds)), "samples_per_run": ";".join(str(s) for s in samples),
      "runs": ";".join(runs),
  }


def paper_text(paper: float | None) -> str:
  """The `paper` column: the paper's number, empty where it gives none."""
  return "" if paper is None else f"{paper:g}"


def row(spec: dict, evaluation: str | None = None) -> dict:
  """One CSV row (COLUMNS -> text) of one spec row."""
  where = f"{spec.get('paper_table')} / {spec.get('setting')} / {spec.get('task')}"
  missing = [k for k in ("paper_table", "setting", "task", "digits", "metric", "runs")
             if k not in spec]
  if missing:
    raise SpecError(f"{where}: spec row lacks {', '.join(missing)}")
  if spec["metric"] not in METRICS:
    raise SpecError(f"{where}: unknown metric {spec['metric']!r}; known: {', '.join(METRICS)}")
  runs = run_folders(list(spec["runs"]), where)
  files = [results_file(r, evaluation) for r in runs]
  results = read_results(files)
  values = [_value(r, res, f, spec["task"], int(spec["digits"]), spec["metric"])
            for r, res, f in zip(runs, results, files)]
  samples = [samples_seen(res, f) for res, f in zip(results, files)]
  return {
      "paper_table": spec["paper_table"], "setting": spec["setting"], "task": spec["task"],
      "digits": str(spec["digits"]), "metric": spec["metric"],
      "paper": paper_text(spec.get("paper")), **ours(runs, values, samples),
  }


def _three(text: str) -> str:
  """A CSV number to 3 decimals, half up on its decimal digits (0.8875 -> 0.888)."""
  return str(decimal.Decimal(text).quantize(decimal.Decimal("0.001"), decimal.ROUND_HALF_UP))


def markdown(rows: list[dict]) -> str:
  """The rows as a Markdown table: ours as mean ± std (n runs) beside the paper's number."""
  lines = ["| table | setting | task | digits | metric | paper | ours (mean ± std) | runs |",
           "|---|---|---|---|---|---|---|---|"]
  for r in rows:
    ours = (_three(r["ours_mean"]) if r["ours_mean"] else "–") + (
        f" ± {_three(r['ours_std'])}" if r["ours_std"] else "")
    n = len(r["runs"].split(";"))
    lines.append(f"| `{r['paper_table']}` | {r['setting']} | {r['task']} | {r['digits']} | "
                 f"{r['metric']} | {r['paper'] or '–'} | {ours} | {n} |")
  return "\n".join(lines) + "\n"


def write(rows: list[dict], out: pathlib.Path) -> None:
  out.parent.mkdir(parents=True, exist_ok=True)
  with open(out, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
  parser = cli.ArgumentParser(prog="python -m nupa_jax.report.versus", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--spec", required=True, type=pathlib.Path, help="rows, as JSON")
  parser.add_argument("--out", required=True, type=pathlib.Path, help="the CSV to write")
  parser.add_argument("--markdown", type=pathlib.Path, help="also write the rows as Markdown")
  parser.add_argument("--evaluation", help="results file inside each run, as a glob pattern "
                                           "(default: eval/latest.json)")
  args = parser.parse_args(argv)
  with cli.usage_errors(SpecError, loading.ReportError, json.JSONDecodeError,
                        *cli.PATH_ERRORS):
    rows = [row(spec, args.evaluation) for spec in json.loads(args.spec.read_text())]
    write(rows, args.out)
    if args.markdown:
      args.markdown.write_text(markdown(rows))
  print(f"{len(rows)} rows -> {args.out}", file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main())
