"""`python -m nupa_jax.evaluation.relearn`: a results file's well-learned / performance-preserving
digits by another rule, without generating again.

    python -m nupa_jax.evaluation.relearn --rule official RUN/eval/latest.json [FILE ...]
    python -m nupa_jax.evaluation.relearn --rule official RUN/eval/latest.json --out OTHER.json

The digits are computed from each task's per-length means, which the file holds, so any rule of
`metrics.LEARNED_DIGITS_RULES` applies afterwards ("official": the paper's tables' rule). Each
file is rewritten in place (atomically; rerun with the other rule to go back), or, for one
input, written to `--out`. Each task records the rule (`learned_digits_rule`). Files are the
trainer's `eval/*.json`, `python -m nupa_jax.evaluate`'s and `benchmark score`'s REPORT.json,
local or gs://.
"""
from __future__ import annotations

import argparse
import json
import sys

from nupa_jax import cli
from nupa_jax import metrics
from nupa_jax import paths
from nupa_jax.evaluation import results as results_lib


def relearn_file(source: str, rule: str, out: str | None = None) -> paths.Path:
  """Rewrites `source` (or writes `out`) with its digits by `rule`; returns the written file."""
  try:
    results = results_lib.relearn(json.loads(paths.path(source).read_text()), rule)
  except ValueError as e:  # not JSON, an unknown task, a task without per-length means
    raise ValueError(f"{source}: {e}") from e
  target = paths.path(out or source)
  target.parent.mkdir(parents=True, exist_ok=True)
  paths.write_text_atomic(target, json.dumps(results, indent=1))
  return target


def main(argv: list[str] | None = None) -> int:
  parser = cli.ArgumentParser(prog="python -m nupa_jax.evaluation.relearn", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("files", nargs="+", help="results files (eval/*.json, REPORT.json)")
  parser.add_argument("--rule", required=True, choices=list(metrics.LEARNED_DIGITS_RULES))
  parser.add_argument("--out", help="write here instead of in place (one input file only)")
  args = parser.parse_args(argv)
  if args.out and len(args.files) > 1:
    cli.fail(f"--out takes one input file, got {len(args.files)}; drop --out to rewrite each "
             "in place")
  with cli.usage_errors(ValueError, *cli.PATH_ERRORS):
    for source in args.files:
      print(f"{source}: {args.rule} -> {relearn_file(source, args.rule, args.out)}",
            file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main())
