"""Figures, tables and an index page from training runs, sweeps and scored benchmarks.

`make_report(inputs, out, metric, labels, log, papers)` does it all; `python -m nupa_jax.report`
is its CLI. `papers` are JSON files of the paper's tables (format: `nupa_jax.report.paper`), each
printed again with our values beside the paper's.
"""
from nupa_jax.report.build import make_report
from nupa_jax.report.loading import ReportError

__all__ = ["ReportError", "make_report"]
