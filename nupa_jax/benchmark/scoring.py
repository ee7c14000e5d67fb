"""Score a predictions file against a built test set: the report behind `benchmark score`.

Predictions are JSONL lines `{"id": ..., "prediction": ...}` with raw model text; the answer is
extracted as in the paper and as `evaluate_llm` reads its replies (`metrics.extract_answer`: the
first answer after the `=` of the first line holding one, a sign or glued characters counting
against it) and scored with `metrics.score`. Tasks with
no prediction at all are left out of the report; within a reported task a question without a
prediction scores as an empty answer (so a partial file cannot look better than it is).
"""
import collections
import json
import os
from typing import Any, Callable, Iterable, Mapping

from nupa_jax import metrics
from nupa_jax import paths
from nupa_jax import tasks
from nupa_jax.benchmark import testset

_EXAMPLE_IDS = 10  # ids listed in the report for missing / unknown predictions


class PredictionFileError(ValueError):
  """A malformed predictions file; the message names the file and line."""


def read_by_id(path: str | os.PathLike, check: Callable[[Any, str], dict],
               error: type[ValueError] = PredictionFileError,
               expected: str = '{"id": "...", "prediction": "..."}') -> dict[str, dict]:
  """{line["id"]: check(line, where)} of a JSONL file (a local path or a URL), blank lines
  skipped; `check` gets each parsed line and its `FILE:LINE`, returns it (or raises) and leaves
  the `id` a string. A line that is not UTF-8 JSON (`expected` says what it should be) or a
  second line of one id raises `error` naming the file and line."""
  out = {}
  with paths.path(path).open("rb") as f:
    for lineno, raw in enumerate(f, 1):
      where = f"{os.fspath(path)}:{lineno}"
      try:
        line = raw.decode("utf-8")
        row = json.loads(line) if line.strip() else None
      except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise error(f"{where}: not a JSON line ({e}); expected {expected}") from e
      if row is None:
        continue
      row = check(row, where)
      if row["id"] in out:
        raise error(f"{where}: a second answer to {row['id']!r}")
      out[row["id"]] = row
  return out


def _prediction(row: Any, where: str) -> dict:
  if not (isinstance(row, dict) and isinstance(row.get("id"), str)
          and isinstance(row.get("prediction"), str)):
    raise PredictionFileError(f"{where}: expected an object with string fields \"id\" and "
                              f"\"prediction\", got {json.dumps(row)[:200]}")
  return row


def read_predictions(path: str | os.PathLike) -> dict[str, str]:
  """{id: prediction} from a JSONL file (a local path or a URL); blank lines are skipped."""
  return {key: row["prediction"] for key, row in read_by_id(path, _prediction).items()}


def score_predictions(questions: Iterable[testset.Question],
                      predictions: Mapping[str, str]) -> dict:
  """The REPORT.json structure: `{task: metrics.summarize(...), "_meta": {...}}`."""
  tallies = collections.defaultdict(metrics.Tally)
  predicted = collections.Counter()
  missing = collections.defaultdict(list)
  seen = set()
  for question in questions:
    spec = tasks.get(question.task)
    seen.add(question.id)
    text = predictions.get(question.id)
    if text is None:
      missing[question.task].append(question.id)
      answer = ""
    else:
      predicted[question.task] += 1
      answer = metrics.extract_answer(text, spec.answer_repr)
    tallies[question.task].add(question.digits,
                               metrics.score(answer, question.answer, spec.answer_repr))
  reported = [name for name in tallies if predicted[name]]
  report = {name: tallies[name].summary(tasks.get(name).max_digits) for name in reported}
  missing = [qid for name in reported for qid in missing[name]]
  unknown = sorted(set(predictions) - seen)
  report["_meta"] = {
      "test_questions": len(seen),
      "scored": sum(predicted.values()),
      "missing": len(missing), "missing_ids": missing[:_EXAMPLE_IDS],
      "unknown": len(unknown), "unknown_ids": unknown[:_EXAMPLE_IDS],
      "tasks_without_predictions": [name for name in tallies if not predicted[name]],
  }
  return report


def _cell(stats: Mapping) -> str:
  if not stats["n"]:
    return "-"
  return f"{stats['exact_match']:.2f}/{stats['digit_match']:.2f}/{stats['dlength']:.2f}"


def format_table(report: Mapping) -> str:
  """Tasks x buckets of exact match / digit match / dlength, then wld and ppd per metric."""
  names = [name for name in report if name != "_meta"]
  header = ["task", *metrics.BUCKET_NAMES, "wld", "ppd"]
  rows = [header, ["", *["EM/DM/dlen"] * len(metrics.BUCKET_NAMES), "EM/DM/dlen", "EM/DM/dlen"]]
  for name in names:
    task = report[name]
    learned = ["/".join(str(task[f"{level}_digits"][m]) for m in metrics.METRICS)
               for level in metrics.LEVELS]
    rows.append([name, *(_cell(task[b]) for b in metrics.BUCKET_NAMES), *learned])
  widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
  return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                   for row in rows)
