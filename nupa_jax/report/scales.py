"""How each metric is drawn: axis label, transform and colour direction, keyed by metric name.

Exact and digit match are fractions in [0, 1], higher is better. dlength is a count of missing
or extra digits, lower is better, and spans orders of magnitude, so it is drawn as
log2(dlength + 1) as in the paper's figures.
"""
from collections.abc import Callable
import dataclasses
import math

from nupa_jax.report.loading import ReportError


@dataclasses.dataclass(frozen=True)
class Scale:
  title: str  # the metric's name in prose
  axis: str  # the label of the axis it is drawn on
  transform: Callable[[float], float]  # value -> drawn value
  cmap: str  # heatmap colours, brightest = best
  limits: tuple[float, float] | None  # fixed range of the drawn value, None = from the data


SCALES = {
    "exact_match": Scale("exact match", "exact match", lambda v: v, "viridis", (0.0, 1.0)),
    "digit_match": Scale("digit match", "digit match", lambda v: v, "viridis", (0.0, 1.0)),
    "dlength": Scale("dlength", "log2(dlength + 1)", lambda v: math.log2(v + 1), "viridis_r",
                     None),
}


def get(metric: str) -> Scale:
  if metric not in SCALES:
    raise ReportError(f"unknown metric {metric!r}; known: {', '.join(SCALES)}")
  return SCALES[metric]
