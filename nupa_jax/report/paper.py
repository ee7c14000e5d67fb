"""The paper's numbers as a JSON file, to be put next to ours (`python -m nupa_jax.report
--paper FILE.json`).

A reproduction is read against the paper's tables, so the report prints each paper table again
with our number beside each of the paper's. A paper file holds only the paper's numbers and
says where in our runs to read the matching ones. This module reads and checks the file (its
format is `FORMAT`, also shown by `--help`); which runs a cell takes its number from is
`paper_tables`' job.

  {"source": "Number Cookbook (ICLR 2025)",
   "tables": [
     {"title": "8-digit digit match, 0.1B model, 10^6 samples",
      "source": "Table 14 (tab:small_dataset_full)",
      "note": "free text shown under the title",
      "rows": "pe", "columns": "task",
      "metric": "digit_match", "digits": 8,
      "where": {"reverse": "none"},
      "paper": {"rope": {"add_int": 0.97, "add_float": {"value": 0.99, "pm": 0.01}},
                "nope": {"add_int": 0.78, "add_float": null}}}]}

Fields of a table (`source` and `note` optional, `source` also at the file's top level):
- `rows`, `columns`: what the paper's row and column keys are. Either a setting of the runs: a
  short name of `grouping.SHORT_NAMES` (pe, tokenizer, k, align, reverse, pad, hints, size,
  layers, hidden, train_digits, init_from), a sweep grid argument, or a dotted config key
  (`model.posenc.name`); `task` is the task a run was evaluated on. Or an eval coordinate:
  `digits` (keys "8", "9"), `bucket` (keys S, M, L, XL) or `metric`.
- `metric`: exact_match, digit_match or dlength; omitted when an axis is `metric`.
- `digits` (a length) or `bucket` (S/M/L/XL): where our value is read; omitted when an axis is
  `digits` or `bucket`.
- `where` (optional): {setting: value} every compared run must have (`"reverse": "int"`,
  `"pad": false`, `"train_digits": [1, 8]`). Values compare as the report's labels show them,
  so `"1-8"` and `[1, 8]` are the same.
- `paper`: {row key: {column key: cell}}, a cell being a number, {"value": number, "pm":
  number} (the paper's ±, e.g. a standard error) or null (no number in the paper). Rows and
  columns keep the order they are first written in; a row may leave out columns.
"""
import dataclasses
import pathlib
from typing import Any

from nupa_jax.report.loading import BUCKETS, METRICS, ReportError, read_json

DIGITS, BUCKET, METRIC = "digits", "bucket", "metric"
EVAL_AXES = (DIGITS, BUCKET, METRIC)  # axes that say where to read a value, not which runs
TASK = "task"
FORMAT = __doc__[__doc__.index("  {\"source\""):]  # the file format, for `--help`
_TABLE_FIELDS = ("title", "source", "note", "rows", "columns", "metric", "digits", "bucket",
                 "where", "paper")
_FILE_FIELDS = ("source", "tables")


@dataclasses.dataclass(frozen=True)
class PaperValue:
  """One number of the paper, with its ± when the paper prints one."""
  value: float
  pm: float | None = None


@dataclasses.dataclass(frozen=True)
class PaperTable:
  """One paper table: its grid of numbers and where our matching numbers are to be read."""
  origin: str  # "FILE, table N ('title')", for messages
  title: str
  source: str
  note: str
  rows: str  # the axis of the row keys
  columns: str
  fixed: dict[str, Any]  # the table-level eval coordinates: metric and digits or bucket
  where: dict[str, Any]
  row_keys: list[Any]  # ints on a `digits` axis, strings elsewhere
  column_keys: list[Any]
  paper: dict[tuple[Any, Any], PaperValue | None]  # (row, column) -> the paper's number

  def coordinates(self, row: Any, column: Any) -> dict[str, Any]:
    """Everything that selects one cell: pins, eval coordinates, its row and column keys."""
    return self.where | self.fixed | {self.rows: row, self.columns: column}


def _number(value: Any) -> bool:
  return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(raw: Any, fail) -> PaperValue | None:
  if raw is None:
    return None
  if _number(raw):
    return PaperValue(raw)
  if isinstance(raw, dict) and set(raw) <= {"value", "pm"} and _number(raw.get("value")) and (
      raw.get("pm") is None or _number(raw["pm"])):
    return PaperValue(raw["value"], raw.get("pm"))
  fail(f"cell {raw!r} is not a number, {{\"value\": number, \"pm\": number}} or null")


def _axis_key(axis: str, key: str, fail) -> Any:
  """A row / column key as the axis reads it: a digit length, a bucket, a metric or a setting."""
  if axis == DIGITS:
    if not key.isdigit() or int(key) < 1:
      fail(f"digits key {key!r} is not a digit length (\"8\")")
    return int(key)
  if axis == BUCKET and key not in BUCKETS:
    fail(f"bucket key {key!r} is not one of {', '.join(BUCKETS)}")
  if axis == METRIC and key not in METRICS:
    fail(f"metric key {key!r} is not one of {', '.join(METRICS)}")
  return key


def _fixed(raw: dict[str, Any], axes: tuple[str, str], fail) -> dict[str, Any]:
  """The table-level metric and digits / bucket, each present exactly when no axis is it."""
  fixed = {}
  if METRIC in axes:
    if METRIC in raw:
      fail("has both `metric` and a `metric` axis; drop the field")
  elif raw.get(METRIC) not in METRICS:
    fail(f"metric is {raw.get(METRIC)!r}; expected one of {', '.join(METRICS)} "
         "(or make `metric` the rows or columns)")
  else:
    fixed[METRIC] = raw[METRIC]
  points = [k for k in (DIGITS, BUCKET) if k in raw]
  if DIGITS in axes or BUCKET in axes:
    if DIGITS in axes and BUCKET in axes:
      fail("rows and columns are digits and bucket; a value is read at one or the other")
    if points:
      fail(f"has a `{points[0]}` field and a digits / bucket axis; drop the field")
  elif len(points) != 1:
    fail("needs exactly one of `digits` (a length, e.g. 8) or `bucket` (S, M, L, XL)")
  elif points == [DIGITS]:
    if not _number(raw[DIGITS]) or not isinstance(raw[DIGITS], int) or raw[DIGITS] < 1:
      fail(f"digits is {raw[DIGITS]!r}; expected a digit length such as 8")
    fixed[DIGITS] = raw[DIGITS]
  else:
    fixed[BUCKET] = _axis_key(BUCKET, raw[BUCKET], fail)
  return fixed


def _table(raw: Any, origin: str, file_source: str) -> PaperTable:
  def fail(message: str):
    raise ReportError(f"{origin}: {message}")

  if not isinstance(raw, dict):
    fail(f"expected a table object with {', '.join(_TABLE_FIELDS)}")
  unknown = [k for k in raw if k not in _TABLE_FIELDS]
  if unknown:
    fail(f"unknown field {unknown[0]!r}; known: {', '.join(_TABLE_FIELDS)}")
  for name in ("title", "rows", "columns"):
    if not isinstance(raw.get(name), str) or not raw[name]:
      fail(f"`{name}` must be a non-empty string")
  for name in ("source", "note"):
    if not isinstance(raw.get(name, ""), str):
      fail(f"`{name}` must be a string")
  axes = (raw["rows"], raw["columns"])
  if axes[0] == axes[1]:
    fail(f"rows and columns are both {axes[0]!r}; pick two different keys")
  fixed = _fixed(raw, axes, fail)
  where = raw.get("where", {})
  if not isinstance(where, dict):
    fail(f"`where` is {where!r}; expected {{setting: value}}")
  for key in where:
    if key in EVAL_AXES:
      fail(f"`where` pins {key!r}; give it as the table's `{key}` field instead")
    if key in axes:
      fail(f"`where` pins {key!r}, which is also the rows or columns")
  grid = raw.get("paper")
  if not isinstance(grid, dict) or not grid or not all(isinstance(r, dict)
                                                       for r in grid.values()):
    fail("`paper` must be a non-empty {row key: {column key: number or null}}")
  paper = {}
  for row, cells in grid.items():
    for column, cell in cells.items():
      key = (_axis_key(axes[0], row, fail), _axis_key(axes[1], column, fail))
      paper[key] = _cell(cell, lambda m: fail(f"row {row!r}, column {column!r}: {m}"))
  return PaperTable(
      origin=origin, title=raw["title"],
      source=", ".join(s for s in (file_source, raw.get("source", "")) if s),
      note=raw.get("note", ""), rows=axes[0], columns=axes[1], fixed=fixed, where=where,
      row_keys=[_axis_key(axes[0], r, fail) for r in grid],
      column_keys=list(dict.fromkeys(c for _, c in paper)), paper=paper)


def read_paper(path: pathlib.Path) -> list[PaperTable]:
  """The tables of one paper file, checked; a ReportError names the file, table and fix."""
  raw = read_json(path)
  if not isinstance(raw, dict) or not isinstance(raw.get("tables"), list) or not raw["tables"]:
    raise ReportError(f"{path}: expected {{\"source\": ..., \"tables\": [{{\"title\", \"rows\", "
                      "\"columns\", \"metric\", \"digits\", \"paper\"}}, ...]}} (see "
                      "`python -m nupa_jax.report --help`)")
  unknown = [k for k in raw if k not in _FILE_FIELDS]
  if unknown:
    raise ReportError(f"{path}: unknown field {unknown[0]!r}; known: {', '.join(_FILE_FIELDS)}")
  if not isinstance(raw.get("source", ""), str):
    raise ReportError(f"{path}: `source` must be a string")
  return [_table(t, f"{path}, table {i + 1}" + (f" ({t['title']!r})" if isinstance(t, dict)
                                                 and isinstance(t.get("title"), str) else ""),
                 raw.get("source", ""))
          for i, t in enumerate(raw["tables"])]
