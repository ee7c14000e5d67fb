"""`python -m nupa_jax.report`: the paper's figures and tables from runs, sweeps and scores.

  python -m nupa_jax.report --workdirs runs/pe_sweep runs/mixed llama/REPORT.json \\
      --out report/ [--metric exact_match|digit_match|dlength] [--labels RoPE NoPE ...]

Progress goes to stderr; a bad input exits with status 2 and a message naming the file.
"""
import argparse
import pathlib
import sys

from nupa_jax.report import scales
from nupa_jax.report.build import make_report
from nupa_jax.report.loading import ReportError


def _log(message: str) -> None:
  print(f"[report] {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(prog="python -m nupa_jax.report", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--workdirs", nargs="+", required=True, type=pathlib.Path, metavar="DIR",
                      help="run workdirs, sweep folders and `benchmark score` REPORT.json files")
  parser.add_argument("--out", required=True, type=pathlib.Path,
                      help="folder for index.md, figures/ and tables/")
  parser.add_argument("--metric", default="exact_match", choices=list(scales.SCALES),
                      help="metric drawn in the figures (tables hold all three)")
  parser.add_argument("--labels", nargs="+",
                      help="one legend label per line (seeds of one setting share a line), in "
                           "input order; default: what differs between the runs' configs")
  args = parser.parse_args(argv)
  try:
    path = make_report(args.workdirs, args.out, args.metric, args.labels, _log)
  except ReportError as e:
    parser.exit(2, f"error: {e}\n")
  print(path)
  return 0


if __name__ == "__main__":
  sys.exit(main())
