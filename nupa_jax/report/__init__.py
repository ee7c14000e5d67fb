"""Figures, tables and an index page from training runs, sweeps and scored benchmarks.

`make_report(inputs, out, metric, labels)` does it all; `python -m nupa_jax.report` is its CLI.
"""
from nupa_jax.report.build import make_report
from nupa_jax.report.loading import ReportError

__all__ = ["ReportError", "make_report"]
