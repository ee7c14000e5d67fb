"""Our numbers beside the paper's: each paper table again, each cell with our value next to it.

A cell's value is read from the same final evals as every other table of the report (the
`per_digit` entry of `eval/latest.json` at a digit length, or its S/M/L/XL mean), so the docs
quote exactly what the runs wrote. A cell takes every seed of the one setting whose runs match
it and shows their mean ± sample std and n; runs of two settings in one cell are an error
(they are not seeds: the table must pin what tells them apart), as are setting keys no run
knows and a table that matches no run at all. Keys of the paper that no run has, and cells
whose runs lack the digit length, become notes under the table.
"""
import dataclasses
import decimal
import math
import pathlib
import statistics
from typing import Any

from nupa_jax.report import scales, trained
from nupa_jax.report.grouping import SHORT_NAMES, Group, show_value
from nupa_jax.report.loading import Entry, ReportError, TaskResult
from nupa_jax.report.paper import BUCKET, DIGITS, EVAL_AXES, METRIC, TASK, PaperTable, PaperValue
from nupa_jax.report.tables import markdown, write_csv

MISSING = "—"
# Short names -> dotted config keys; `task` is the evaluated task, not `data.tasks`.
_DOTTED = {short: dotted for dotted, short in SHORT_NAMES.items() if short != TASK}


@dataclasses.dataclass(frozen=True)
class Ours:
  """Our value of one cell: the setting (report line) it comes from and its seeds' statistics."""
  line: str
  runs: list[str]
  mean: float  # NaN when no run has a value at the cell's digits / bucket
  std: float  # NaN below two values
  n: int


@dataclasses.dataclass(frozen=True)
class Comparison:
  """One paper table with our value for each of its cells (None: no run matches the cell)."""
  table: PaperTable
  ours: dict[tuple[Any, Any], Ours | None]
  notes: list[str]


def _setting(entry: Entry, key: str) -> str | None:
  """A run's `key` setting as the labels show it: its sweep argument, else its config field."""
  dotted = _DOTTED.get(key, key)
  if entry.args is not None and key in entry.args:
    return show_value(dotted, entry.args[key])
  return show_value(dotted, entry.config[dotted]) if dotted in entry.config else None


def _wanted(key: str, value: Any) -> str:
  """A paper key or `where` value shown the same way, so the two compare as strings."""
  if key == TASK:
    return trained.canonical(str(value))
  return show_value(_DOTTED.get(key, key), value)


def _values(entries: list[Entry], key: str) -> list[str]:
  """What the runs have for a setting key, in order of appearance."""
  if key == TASK:
    return list(dict.fromkeys(t for e in entries for t in e.final.tasks))
  return list(dict.fromkeys(v for e in entries if (v := _setting(e, key)) is not None))


def _check_keys(table: PaperTable, entries: list[Entry]) -> None:
  known = {TASK, *_DOTTED, *(k for e in entries for k in e.config),
           *(k for e in entries if e.args for k in e.args)}
  for key in [table.rows, table.columns, *table.where]:
    if key not in EVAL_AXES and key not in known:
      raise ReportError(
          f"{table.origin}: unknown setting {key!r}; known: {', '.join(EVAL_AXES)}, task, "
          f"{', '.join(_DOTTED)}, a sweep argument or a dotted config key "
          "(e.g. model.posenc.name)")


def _point(coordinates: dict[str, Any]) -> str:
  return (f"{coordinates[DIGITS]} digits" if DIGITS in coordinates
          else f"bucket {coordinates[BUCKET]}")


def _value(result: TaskResult, coordinates: dict[str, Any]) -> float | None:
  metric = coordinates[METRIC]
  if DIGITS in coordinates:
    return result.per_digit.get(coordinates[DIGITS], {}).get(metric)
  return result.buckets.get(coordinates[BUCKET], {}).get(metric)


def _ours(table: PaperTable, row: Any, column: Any, groups: list[Group]) -> Ours | None:
  """The seeds of the one setting whose runs have the cell's settings and evaluated its task."""
  coordinates = table.coordinates(row, column)
  selectors = {k: _wanted(k, v) for k, v in coordinates.items() if k not in EVAL_AXES}
  task = selectors.pop(TASK, None)
  matched: dict[int, tuple[Group, list[tuple[Entry, str]]]] = {}
  for group in groups:
    for entry in group.entries:
      if any(_setting(entry, k) != v for k, v in selectors.items()):
        continue
      if task is None and len(entry.final.tasks) > 1:
        raise ReportError(
            f"{table.origin}: run {entry.name} evaluates {', '.join(entry.final.tasks)}; say "
            "which task the table is about (\"where\": {\"task\": ...}, or a task axis)")
      found = task if task is not None else next(iter(entry.final.tasks))
      if found in entry.final.tasks:
        matched.setdefault(id(group), (group, []))[1].append((entry, found))
  if not matched:
    return None
  if len(matched) > 1:
    lines = "; ".join(g.label for g, _ in matched.values())
    raise ReportError(
        f"{table.origin}: cell ({row}, {column}) matches runs of {len(matched)} settings "
        f"({lines}); pin the setting that tells them apart with \"where\"")
  ((group, runs),) = matched.values()
  values = [_value(e.final.tasks[t], coordinates) for e, t in runs]
  values = [v for v in values if v is not None and not math.isnan(v)]
  return Ours(line=group.label, runs=[e.name for e, _ in runs],
              mean=statistics.fmean(values) if values else math.nan,
              std=statistics.stdev(values) if len(values) > 1 else math.nan, n=len(values))


def _unknown_keys(table: PaperTable, entries: list[Entry]) -> list[str]:
  """Notes on the paper's row / column keys that no run has (a typo, or a setting not run)."""
  notes = []
  for axis, keys in ((table.rows, table.row_keys), (table.columns, table.column_keys)):
    if axis in EVAL_AXES:
      continue
    have = _values(entries, axis)
    notes += [f"no run has {axis}={key} (the runs have {axis}: {', '.join(have) or 'none'})"
              for key in keys if _wanted(axis, key) not in have]
  return notes


def _empty_cells(table: PaperTable, ours: dict[tuple[Any, Any], Ours | None]) -> list[str]:
  """Notes on cells whose runs have no value at the cell's digits / bucket."""
  notes = []
  for (row, column), cell in ours.items():
    if cell is not None and cell.n == 0:
      coordinates = table.coordinates(row, column)
      notes.append(f"({row}, {column}): the runs of {cell.line} have no "
                   f"{coordinates[METRIC]} at {_point(coordinates)}")
  return notes


def compare(table: PaperTable, groups: list[Group]) -> Comparison:
  """Our value for every cell of `table`; raises ReportError when the table matches no run."""
  entries = [e for g in groups for e in g.entries]
  _check_keys(table, entries)
  ours = {(r, c): _ours(table, r, c, groups) for r in table.row_keys for c in table.column_keys}
  if not any(cell is not None for cell in ours.values()):
    keys = [k for k in (table.rows, table.columns, *table.where) if k not in EVAL_AXES]
    have = "; ".join(f"{k}: {', '.join(_values(entries, k)) or 'none'}" for k in keys)
    raise ReportError(f"{table.origin} matches no run; the runs have {have}")
  empty = _empty_cells(table, ours)
  if not any(cell is not None and cell.n for cell in ours.values()):
    raise ReportError(f"{table.origin}: no value in any cell: {'; '.join(empty)}")
  return Comparison(table, ours, _unknown_keys(table, entries) + empty)


def _key_text(axis: str, key: Any) -> str:
  return f"{key} digits" if axis == DIGITS else str(key)


def _number_text(value: float) -> str:
  return f"{value:.3f}"


def _ours_text(cell: Ours | None) -> str:
  if cell is None or cell.n == 0:
    return MISSING
  if cell.n == 1:
    return _number_text(cell.mean)
  return f"{_number_text(cell.mean)} ± {_number_text(cell.std)} (n={cell.n})"


def _decimals(table: PaperTable) -> int:
  """JSON drops a number's trailing zeros (1.00 -> 1.0): print the paper's numbers with as
  many decimals as the table's most precise one, as a printed table does."""
  numbers = [v for cell in table.paper.values() if cell for v in (cell.value, cell.pm)
             if v is not None]
  return max([0] + [-decimal.Decimal(repr(v)).as_tuple().exponent for v in numbers])


def _paper_text(cell: PaperValue | None, decimals: int) -> str:
  if cell is None:
    return MISSING
  return f"{cell.value:.{decimals}f}" + ("" if cell.pm is None else f" ± {cell.pm:.{decimals}f}")


def _axis_of(table: PaperTable, axis: str) -> str:
  return "row" if table.rows == axis else "column"


def _caption(comparison: Comparison) -> str:
  """What our numbers are (which metric where, from which runs) and what the marks mean."""
  table = comparison.table
  metric = (scales.get(table.fixed[METRIC]).title if METRIC in table.fixed
            else f"the metric of its {_axis_of(table, METRIC)}")
  axis = DIGITS if DIGITS in (table.rows, table.columns) else BUCKET
  point = (_point(table.fixed) if DIGITS in table.fixed or BUCKET in table.fixed
           else f"the {'digit length' if axis == DIGITS else 'bucket'} of its "
           f"{_axis_of(table, axis)}")
  pinned = ", ".join(f"{k}={_wanted(k, v)}" for k, v in table.where.items())
  runs = max(cell.n for cell in comparison.ours.values() if cell is not None)
  text = (f"**ours**: {metric} at {point} in the final eval (`eval/latest.json`) of the runs"
          + (f" with {pinned}" if pinned else "")
          + ("; mean ± sample std over the n runs of a setting (its seeds, or repeats of one "
             "seed)" if runs > 1 else ", one run each") + ". **paper**: as printed.")
  cells = [(r, c) for r in table.row_keys for c in table.column_keys]
  if any(not comparison.ours[k] or not comparison.ours[k].n or not table.paper.get(k)
         for k in cells):
    text += f" {MISSING} = no run, or no number in the paper."
  return text


def render(comparison: Comparison, level: int) -> str:
  """Title (a heading of `level`), source, caption, the side-by-side markdown table and its
  notes: the table's own file, and its section of the index."""
  table = comparison.table
  decimals = _decimals(table)
  header = [table.rows]
  for column in table.column_keys:
    header += [f"{_key_text(table.columns, column)}: ours", "paper"]
  rows = []
  for row in table.row_keys:
    cells = [_key_text(table.rows, row)]
    for column in table.column_keys:
      cells += [_ours_text(comparison.ours[(row, column)]),
                _paper_text(table.paper.get((row, column)), decimals)]
    rows.append(cells)
  text = [f"{'#' * level} {table.title}\n"]
  text += [f"{t}\n" for t in (table.source, table.note) if t]
  text += [_caption(comparison) + "\n", markdown(header, rows)]
  if comparison.notes:
    text.append("Notes: " + "; ".join(comparison.notes) + ".\n")
  return "\n".join(text)


def write(comparison: Comparison, stem: pathlib.Path) -> dict[str, pathlib.Path]:
  """STEM.md (title, source, the table) and STEM.csv (one line per cell, full precision)."""
  table = comparison.table
  md = stem.parent / f"{stem.name}.md"
  md.write_text(render(comparison, level=1))
  rows = []
  for (row, column), cell in comparison.ours.items():
    paper = table.paper.get((row, column))
    rows.append([row, column, cell and cell.line, cell and cell.mean, cell and cell.std,
                 cell.n if cell else 0, paper and paper.value, paper and paper.pm,
                 " ".join(cell.runs) if cell else ""])
  header = [table.rows, table.columns, "line", "ours_mean", "ours_std", "ours_n", "paper",
            "paper_pm", "runs"]
  return {"markdown": md, "csv": write_csv(stem.parent / f"{stem.name}.csv", header, rows)}
