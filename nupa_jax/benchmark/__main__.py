"""`python -m nupa_jax.benchmark build|score`: freeze the NUPA test set; score predictions.

  build --out DIR [--per-length 1000] [--seed 0] [--tasks a,b,...] [--format jsonl|tfds|both]
      DIR/test.jsonl: one question a line, {"id", "task", "digits", "bucket", "a", "b",
      "prompt", "answer"}; DIR/nupa_test/: the same questions as a TFDS array_record dataset.
  score --test DIR --predictions FILE.jsonl [--out REPORT.json] [--tasks a,b] [--per-length N]
      FILE.jsonl: {"id", "prediction"} lines (raw model text is fine: the answer is the first
      one after the `=` of the first line holding one, as evaluate_llm reads its replies; a
      sign or characters glued to it make it wrong). Prints a tasks x buckets table and
      writes REPORT.json. A test question without a prediction scores as empty; --tasks and
      --per-length score only the questions `evaluate_llm` asked with the same options.
"""
import argparse
import json
import sys
import time

from nupa_jax import cli
from nupa_jax.benchmark import build
from nupa_jax.benchmark import files
from nupa_jax.benchmark import scoring

_FORMATS = {"jsonl": ("jsonl",), "tfds": ("tfds",), "both": build.FORMATS}


def _task_names(text: str | None) -> list[str] | None:
  return [name.strip() for name in text.split(",") if name.strip()] if text else None


def _build(args: argparse.Namespace) -> None:
  names = _task_names(args.tasks)
  cli.output_dir(args.out, "--out", remote=False)
  start = time.perf_counter()
  counts = build.build(args.out, seed=args.seed, per_length=args.per_length, task_names=names,
                       formats=_FORMATS[args.format], workers=args.workers)
  print(f"wrote {sum(counts.values()):,} questions of {len(counts)} tasks ({args.format}) to "
        f"{args.out} in {time.perf_counter() - start:.1f} s", file=sys.stderr)


def _score(args: argparse.Namespace) -> None:
  predictions = scoring.read_predictions(args.predictions)
  if args.tasks or args.per_length:  # the questions evaluate_llm asked with these options
    selected, _ = files.select_questions(args.test, _task_names(args.tasks), args.per_length)
    questions = [q for qs in selected.values() for q in qs]
  else:
    questions = files.read_test_set(args.test)
  report = scoring.score_predictions(questions, predictions)
  meta = report["_meta"]
  if not meta["scored"]:
    raise ValueError(f"no prediction in {args.predictions} has the id of a question in "
                     f"{args.test}; ids look like {next(files.read_test_set(args.test)).id!r}")
  meta.update(test=args.test, predictions=args.predictions, per_length=args.per_length)
  print(scoring.format_table(report))
  if meta["missing"]:
    print(f"warning: {meta['missing']} test questions have no prediction and score as empty, "
          f"e.g. {', '.join(meta['missing_ids'])}", file=sys.stderr)
  if meta["unknown"]:
    print(f"warning: {meta['unknown']} predictions have ids of no question scored (not in the "
          f"test set, or left out by --tasks / --per-length) and were ignored, e.g. "
          f"{', '.join(meta['unknown_ids'])}", file=sys.stderr)
  if args.out:
    with open(args.out, "w") as f:
      json.dump(report, f, indent=1)
    print(f"wrote {args.out}", file=sys.stderr)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
  parser = cli.ArgumentParser(prog="python -m nupa_jax.benchmark", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  commands = parser.add_subparsers(dest="command", required=True)
  b = commands.add_parser("build", help="write the frozen test set")
  b.add_argument("--out", required=True, help="output directory")
  b.add_argument("--per-length", type=int, default=1000, help="questions per task and length")
  b.add_argument("--seed", type=int, default=0)
  b.add_argument("--tasks", help="comma-separated task names or aliases (default: every task)")
  b.add_argument("--format", choices=sorted(_FORMATS), default="both")
  b.add_argument("--workers", type=int, help="processes (default: one per CPU core)")
  b.set_defaults(run=_build)
  s = commands.add_parser("score", help="score a predictions file")
  s.add_argument("--test", required=True, help="directory written by `build`")
  s.add_argument("--predictions", required=True, help='JSONL of {"id", "prediction"}')
  s.add_argument("--out", help="REPORT.json to write")
  s.add_argument("--tasks", help="score only these tasks (comma-separated names or aliases)")
  s.add_argument("--per-length", type=int,
                 help="score only the first N questions of each task and length (what "
                      "evaluate_llm --per-length N asks)")
  s.set_defaults(run=_score)
  return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
  args = parse_args(argv)
  with cli.usage_errors(ValueError, *cli.PATH_ERRORS):  # a bad file or name: status 2
    args.run(args)
  return 0


if __name__ == "__main__":
  sys.exit(main())
