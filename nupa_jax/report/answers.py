"""`python -m nupa_jax.report.answers`: the kinds of error in predictions files, by task and
length, and the answers that change between files of one model scored two ways.

    python -m nupa_jax.report.answers A.predictions.jsonl [B.predictions.jsonl ...] \\
        [--labels consecutive training] [--tasks add_int] [--out answers.csv]

The files are those `python -m nupa_jax.evaluate --predictions` writes, one JSON line a
question (on several processes, `cat` an evaluation's `.process-K` files into one first). Each
answer is right (exact match); not an answer of the task's form (`no_answer`: nothing, or text
that is not a number of its representation); of the wrong length (`wrong_length`: some part,
such as a float's integer or decimal part, longer or shorter than the true one's; a digit
dropped or added shifts every digit above it, so digit match alone cannot tell this from wrong
digits); or of the right length with wrong digits (`wrong_digits`). Lengths are read from the
answers themselves, whatever `dlength_rule` scored the run. A row a (file, task, length)
counts the questions and each kind. The files after the first must hold exactly the first's
questions (ids and true answers: one evaluation's questions), and their rows also count those
`fixed` (wrong in the first file, right here) and `broken` (right there, wrong here). Prints
the rows as Markdown; `--out` also writes them as CSV.
"""
from __future__ import annotations

import argparse
import collections
import csv
import dataclasses
import io
import os
import sys
from collections.abc import Sequence

from nupa_jax import cli
from nupa_jax import numbers
from nupa_jax import paths
from nupa_jax import tasks as tasks_lib
from nupa_jax.benchmark import scoring

KINDS = ("right", "no_answer", "wrong_length", "wrong_digits")
COLUMNS = ("label", "task", "digits", "questions", *KINDS, "fixed", "broken")
# What a line must hold, and of which type; `a` and `b` tell questions of one id apart too.
FIELDS = {"id": str, "task": str, "digits": int, "answer": str, "prediction": str,
          "exact_match": (int, float)}
SAME_QUESTION = ("task", "digits", "a", "b", "answer")


class AnswersError(ValueError):
  """A predictions file that cannot be read or compared; the message names the file."""


@dataclasses.dataclass(frozen=True)
class Answers:
  """One predictions file: {question id: its line, with its `kind`}."""
  path: str
  label: str
  records: dict[str, dict]


def _checked(record, where: str) -> dict:
  if not isinstance(record, dict):
    raise AnswersError(f"{where}: not a JSON object")
  wrong = [name for name, types in FIELDS.items() if not isinstance(record.get(name), types)]
  if wrong:
    raise AnswersError(f"{where}: no {', '.join(wrong)} of the right type: is this a file of "
                       "`nupa_jax.evaluate --predictions`?")
  if record["task"] not in tasks_lib.names():
    raise AnswersError(f"{where}: unknown task {record['task']!r}")
  if numbers.split_parts(record["answer"], tasks_lib.get(record["task"]).answer_repr) is None:
    raise AnswersError(f"{where}: the true answer {record['answer']!r} is not a "
                       f"{tasks_lib.get(record['task']).answer_repr} number")
  return {**record, "kind": kind(record)}


def kind(record: dict) -> str:
  """One of KINDS, from the line's exact match, true answer and prediction."""
  if record["exact_match"] == 1:
    return "right"
  representation = tasks_lib.get(record["task"]).answer_repr
  predicted = numbers.split_parts(record["prediction"], representation)
  if predicted is None:
    return "no_answer"
  truth = numbers.split_parts(record["answer"], representation)
  return "wrong_length" if list(map(len, predicted)) != list(map(len, truth)) else "wrong_digits"


def read(path: str | os.PathLike, label: str) -> Answers:
  records = scoring.read_by_id(path, _checked, AnswersError,
                               "a line of `nupa_jax.evaluate --predictions`")
  if not records:
    raise AnswersError(f"{os.fspath(path)}: no answers")
  return Answers(os.fspath(path), label, records)


def _check_same_questions(first: Answers, other: Answers) -> None:
  only = set(first.records) ^ set(other.records)
  if only:
    raise AnswersError(
        f"{other.path} ({other.label}) has {len(other.records)} answers and {first.path} "
        f"({first.label}) {len(first.records)}; {len(only)} questions are in only one, e.g. "
        f"{sorted(only)[0]!r}: compare files of one evaluation (its .process-K files joined)")
  for question, record in first.records.items():
    mine = other.records[question]
    if any(record.get(name) != mine.get(name) for name in SAME_QUESTION):
      raise AnswersError(f"{other.path} and {first.path} hold different questions under the "
                         f"id {question!r} (another test seed?)")


def rows(files: Sequence[Answers], tasks: Sequence[str] | None = None) -> list[dict]:
  """One row a (file, task, length), tasks and lengths in sorted order (COLUMNS)."""
  first = files[0]
  for other in files[1:]:
    _check_same_questions(first, other)
  present = {r["task"] for r in first.records.values()}
  unknown = set(tasks or ()) - present
  if unknown:
    raise AnswersError(f"{first.path} holds no answer of {', '.join(sorted(unknown))}; it "
                       f"answers {', '.join(sorted(present))}")
  wanted = set(tasks) if tasks else present
  out = []
  for index, answers in enumerate(files):
    counts = collections.defaultdict(collections.Counter)
    for question, record in answers.records.items():
      if record["task"] in wanted:
        cell = counts[record["task"], record["digits"]]
        cell["questions"] += 1
        cell[record["kind"]] += 1
        was_right = first.records[question]["kind"] == "right"
        cell["fixed"] += record["kind"] == "right" and not was_right
        cell["broken"] += was_right and record["kind"] != "right"
    for (task, digits), cell in sorted(counts.items()):
      out.append({"label": answers.label, "task": task, "digits": digits,
                  **{name: cell[name] for name in ("questions", *KINDS)},
                  **{name: cell[name] if index else "" for name in ("fixed", "broken")}})
  return out


def markdown(table: Sequence[dict]) -> str:
  lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
  lines += ["| " + " | ".join(str(row[name]) for name in COLUMNS) + " |" for row in table]
  return "\n".join(lines) + "\n"


def write_csv(table: Sequence[dict], path: str | os.PathLike) -> None:
  text = io.StringIO()
  writer = csv.DictWriter(text, COLUMNS, lineterminator="\n")
  writer.writeheader()
  writer.writerows(table)
  path = paths.path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  paths.write_text_atomic(path, text.getvalue())


def default_labels(files: Sequence[str]) -> list[str]:
  """Each file's name without `.predictions.jsonl`, or its whole path where names repeat (the
  evaluations of two runs share their file names)."""
  names = [os.path.basename(f).removesuffix(".jsonl").removesuffix(".predictions")
           for f in files]
  return names if len(set(names)) == len(names) else list(files)


def main(argv: list[str] | None = None) -> int:
  parser = cli.ArgumentParser(prog="python -m nupa_jax.report.answers", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("files", nargs="+", help="predictions files (.predictions.jsonl)")
  parser.add_argument("--labels", nargs="+", help="one name a file (default: the file names)")
  parser.add_argument("--tasks", nargs="+", help="tasks to count (default: all)")
  parser.add_argument("--out", help="also write the rows as CSV")
  args = parser.parse_args(argv)
  labels = args.labels or default_labels(args.files)
  if len(labels) != len(args.files):
    parser.error(f"--labels gives {len(labels)} name(s) for {len(args.files)} files")
  if len(set(labels)) != len(labels):
    parser.error(f"--labels repeats a name ({' '.join(labels)}): give each file its own")
  with cli.usage_errors(AnswersError, *cli.PATH_ERRORS):
    table = rows([read(f, label) for f, label in zip(args.files, labels)], args.tasks)
    if args.out:
      write_csv(table, args.out)
  print(markdown(table), end="")
  return 0


if __name__ == "__main__":
  sys.exit(main())
