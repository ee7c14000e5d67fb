"""`python -m nupa_jax.report.answers`: the kinds of error in predictions files, by task and
length, and the answers that change between files of one model scored two ways.

    python -m nupa_jax.report.answers A.predictions.jsonl [B.predictions.jsonl ...] \\
        [--labels consecutive training] [--tasks add_int] [--out answers.csv]

The files are those `python -m nupa_jax.evaluate --predictions` writes, one JSON line a
question with its scores. Each answer is right (exact match), of the wrong length (dlength >
0: a digit dropped or added shifts every digit above it, so digit match alone cannot tell the
two kinds apart), or of the right length with wrong digits. A row a (file, task, length)
counts the questions and each kind; the files after the first must hold the first's questions,
and their rows also count those `fixed` (wrong in the first file, right here) and `broken`
(right there, wrong here). Prints the rows as Markdown; `--out` also writes them as CSV.
"""
from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import sys
from collections.abc import Mapping, Sequence

from nupa_jax import cli
from nupa_jax import paths

COLUMNS = ("label", "task", "digits", "questions", "right", "wrong_length", "wrong_digits",
           "fixed", "broken")
FIELDS = ("id", "task", "digits", "exact_match", "dlength")  # what a line must hold


class AnswersError(ValueError):
  """A predictions file that cannot be read or compared; the message names the file."""


def read(path: str | os.PathLike) -> dict[str, dict]:
  """{question id: its line} of a predictions file."""
  out = {}
  with paths.path(path).open() as f:
    for number, line in enumerate(f, 1):
      if not line.strip():
        continue
      try:
        record = json.loads(line)
      except json.JSONDecodeError as e:
        raise AnswersError(f"{path}:{number}: not a JSON line ({e})") from e
      missing = [name for name in FIELDS if name not in record]
      if missing:
        raise AnswersError(f"{path}:{number}: no {', '.join(missing)}: is this a file of "
                           "`nupa_jax.evaluate --predictions`?")
      if record["id"] in out:
        raise AnswersError(f"{path}:{number}: a second answer to {record['id']!r}")
      out[record["id"]] = record
  return out


def kind(record: Mapping) -> str:
  """right, wrong_length or wrong_digits."""
  if record["exact_match"] == 1:
    return "right"
  return "wrong_length" if record["dlength"] > 0 else "wrong_digits"


def rows(files: Sequence[Mapping[str, dict]], labels: Sequence[str],
         tasks: Sequence[str] | None = None) -> list[dict]:
  """One row a (file, task, length), the tasks and lengths in sorted order (COLUMNS)."""
  first = files[0]
  for label, answers in zip(labels[1:], files[1:]):
    if set(answers) != set(first):
      raise AnswersError(f"{label} answers {len(answers)} questions and {labels[0]} "
                         f"{len(first)}, {len(set(answers) ^ set(first))} of them not both: "
                         "compare files of one evaluation's questions")
  wanted = set(tasks) if tasks else {r["task"] for r in first.values()}
  unknown = wanted - {r["task"] for r in first.values()}
  if unknown:
    raise AnswersError(f"{labels[0]} holds no answer of {', '.join(sorted(unknown))}")
  out = []
  for index, (label, answers) in enumerate(zip(labels, files)):
    counts = collections.defaultdict(collections.Counter)
    for question, record in answers.items():
      if record["task"] in wanted:
        cell = counts[record["task"], record["digits"]]
        cell["questions"] += 1
        cell[kind(record)] += 1
        if index:
          was_right, is_right = first[question]["exact_match"] == 1, kind(record) == "right"
          cell["fixed"] += is_right and not was_right
          cell["broken"] += was_right and not is_right
    for (task, digits), cell in sorted(counts.items()):
      out.append({"label": label, "task": task, "digits": digits,
                  **{name: cell[name] for name in COLUMNS[3:7]},
                  **{name: cell[name] if index else "" for name in COLUMNS[7:]}})
  return out


def markdown(table: Sequence[Mapping]) -> str:
  lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
  lines += ["| " + " | ".join(str(row[name]) for name in COLUMNS) + " |" for row in table]
  return "\n".join(lines) + "\n"


def write_csv(table: Sequence[Mapping], path: str | os.PathLike) -> None:
  with open(path, "w", newline="") as f:
    writer = csv.DictWriter(f, COLUMNS)
    writer.writeheader()
    writer.writerows(table)


def main(argv: list[str] | None = None) -> int:
  parser = cli.ArgumentParser(prog="python -m nupa_jax.report.answers", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("files", nargs="+", help="predictions files (.predictions.jsonl)")
  parser.add_argument("--labels", nargs="+", help="one name a file (default: the file names)")
  parser.add_argument("--tasks", nargs="+", help="tasks to count (default: all)")
  parser.add_argument("--out", help="also write the rows as CSV")
  args = parser.parse_args(argv)
  labels = args.labels or [os.path.basename(f).removesuffix(".jsonl") for f in args.files]
  if len(labels) != len(args.files):
    parser.error(f"--labels gives {len(labels)} names for {len(args.files)} files")
  with cli.usage_errors(AnswersError, *cli.PATH_ERRORS):
    table = rows([read(f) for f in args.files], labels, args.tasks)
    if args.out:
      write_csv(table, args.out)
  print(markdown(table), end="")
  return 0


if __name__ == "__main__":
  sys.exit(main())
