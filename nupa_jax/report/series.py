"""The numbers behind each figure and comparison: seed medians with min-max bands.

Figures and tables draw from these functions only, so the CSV written next to a figure holds
exactly what it shows. A setting with one seed has median = min = max = its value.
"""
import dataclasses
import math
import statistics

from nupa_jax.report.grouping import Group

WLD = "well_learned_digits"
PPD = "performance_preserving_digits"


@dataclasses.dataclass(frozen=True)
class Band:
  """Median, min and max over seeds, and how many seeds had a value (NaN when none did)."""
  median: float
  lo: float
  hi: float
  n: int


def band(values: list[float | None]) -> Band:
  finite = [v for v in values if v is not None and not math.isnan(v)]
  if not finite:
    return Band(math.nan, math.nan, math.nan, 0)
  return Band(statistics.median(finite), min(finite), max(finite), len(finite))


def bucket_band(group: Group, task: str, bucket: str, metric: str) -> Band:
  """A bucket mean over the group's seeds; NaN where the task has no such bucket."""
  return band([e.final.tasks[task].buckets.get(bucket, {}).get(metric)
               for e in group.entries if task in e.final.tasks])


def digits_band(group: Group, task: str, which: str, metric: str) -> Band:
  """Well-learned (`which=WLD`) or performance-preserving (`PPD`) digits over seeds."""
  return band([getattr(e.final.tasks[task], "well_learned" if which == WLD else "preserving")
               .get(metric) for e in group.entries if task in e.final.tasks])


def digit_series(group: Group, task: str, metric: str) -> list[tuple[int, Band]]:
  """Metric per digit length of the final evals, over every length any seed evaluated."""
  results = [e.final.tasks[task] for e in group.entries if task in e.final.tasks]
  digits = sorted({d for r in results for d in r.per_digit})
  return [(d, band([r.per_digit[d][metric] for r in results if d in r.per_digit]))
          for d in digits]


def curve_series(group: Group, task: str,
                 metric: str) -> list[tuple[int, float | None, dict[int, Band]]]:
  """(step, samples seen, {digit: band}) for each periodic eval that every seed has.

  Samples seen is the seeds' median, or None when any eval lacks it (then plot by step).
  A single eval is no curve: fewer than two common evals give [].
  """
  by_step = [{e.step: e for e in entry.history if task in e.tasks} for entry in group.entries]
  steps = sorted(set.intersection(*(set(s) for s in by_step)))
  out = []
  for step in steps:
    evals = [s[step] for s in by_step]
    seen = [e.samples_seen for e in evals]
    digits = sorted({d for e in evals for d in e.tasks[task].per_digit})
    out.append((step, None if None in seen else statistics.median(seen),
                {d: band([e.tasks[task].per_digit[d][metric] for e in evals
                          if d in e.tasks[task].per_digit]) for d in digits}))
  return out if len(out) >= 2 else []


LOSS_SPLITS = {"train": "training loss", "val": "validation loss"}


def loss_series(group: Group, split: str) -> list[tuple[int, float | None, Band]]:
  """(step, samples seen, loss band over seeds) at each step that every seed logged; `split`
  is `train` (logged steps) or `val` (evaluations). Samples seen is the seeds' median, or None
  when any seed's log does not reach that step (then plot by step)."""
  by_step = [{p.step: p for p in getattr(e.losses, split)} for e in group.entries]
  if not all(by_step):
    return []
  out = []
  for step in sorted(set.intersection(*(set(s) for s in by_step))):
    points = [s[step] for s in by_step]
    seen = [p.samples_seen for p in points]
    out.append((step, None if None in seen else statistics.median(seen),
                band([p.loss for p in points])))
  return out
