"""`python -m nupa_jax.report`: the paper's figures and tables from runs, sweeps and scores.

  python -m nupa_jax.report --workdirs runs/pe_sweep runs/mixed llama/REPORT.json \\
      --out report/ [--metric exact_match|digit_match|dlength] [--labels RoPE NoPE ...] \\
      [--paper docs/results/pe_small/paper.json ...]

`--paper` puts each table of a paper file in tables/paper_*.md|csv and in index.md, with our
value beside each of the paper's numbers (the file's format is below).

Progress goes to stderr; a bad input exits with status 2 and a message naming the file.
"""
import argparse
import pathlib
import sys

from nupa_jax import cli
from nupa_jax import paths
from nupa_jax.report import paper, scales
from nupa_jax.report.build import make_report
from nupa_jax.report.loading import ReportError


def _log(message: str) -> None:
  print(f"[report] {message}", file=sys.stderr, flush=True)


def _local_folder(value: str) -> pathlib.Path:
  """`--out`: figures are drawn into local files, so the report's folder is local."""
  if paths.is_remote(value):
    raise argparse.ArgumentTypeError(f"{value}: give a local folder (the runs it reads may be "
                                     "gs:// URLs); copy the report to a bucket afterwards")
  return pathlib.Path(value)


def main(argv: list[str] | None = None) -> int:
  parser = cli.ArgumentParser(prog="python -m nupa_jax.report", description=__doc__,
                              epilog="paper file format:\n\n" + paper.FORMAT,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--workdirs", nargs="+", required=True, type=paths.path, metavar="DIR",
                      help="run workdirs, sweep folders and `benchmark score` REPORT.json files "
                           "(local paths or gs:// URLs)")
  parser.add_argument("--out", required=True, type=_local_folder,
                      help="folder for index.md, figures/ and tables/")
  parser.add_argument("--metric", default="exact_match", choices=list(scales.SCALES),
                      help="metric drawn in the figures (tables hold all three)")
  parser.add_argument("--labels", nargs="+",
                      help="one legend label per line (seeds of one setting share a line), in "
                           "input order; default: what differs between the runs' configs")
  parser.add_argument("--paper", nargs="+", action="extend", default=[], type=pathlib.Path,
                      metavar="FILE.json",
                      help="paper files (repeatable): each of their tables is written with our "
                           "values beside the paper's; format below")
  args = parser.parse_args(argv)
  with cli.usage_errors(ReportError, *cli.PATH_ERRORS):
    cli.output_dir(args.out, "--out", remote=False)
    path = make_report(args.workdirs, args.out, args.metric, args.labels, _log,
                       args.paper)
  print(path)
  return 0


if __name__ == "__main__":
  sys.exit(main())
