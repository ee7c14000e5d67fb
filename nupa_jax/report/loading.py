"""Read what runs, sweeps and `benchmark score` write into one in-memory shape.

Three kinds of input feed a report, all written by other packages:

- a training workdir: `config.json`, `eval/latest.json`, `eval/step_{N}.json` (periodic evals,
  validation loss in `_meta.val_loss`) and `train_metrics.jsonl` (training loss and samples
  seen per logged step; `eval` events with the validation loss);
- a sweep folder: run workdirs as subfolders, optionally a `sweep.json` naming them and the
  grid arguments each was launched with;
- a `benchmark score` REPORT.json: the same per-task layout without a config or history.

Every file problem becomes a `ReportError` naming the file, so a broken run in a sweep of fifty
is found without a traceback hunt. Nothing here draws or writes.
"""
from collections.abc import Callable
import dataclasses
import json
import math
import os
import re
from typing import Any

import ml_collections

from nupa_jax import paths as paths_lib
from nupa_jax import settings
from nupa_jax.evaluation import positions
from nupa_jax.metrics import BUCKET_NAMES as BUCKETS
from nupa_jax.metrics import DEFAULT_DLENGTH_RULE
from nupa_jax.metrics import DEFAULT_LEARNED_DIGITS_RULE
from nupa_jax.metrics import METRICS
from nupa_jax.report import trained

EXPECTED = ("a run workdir (config.json + eval/latest.json), a sweep folder (run workdirs as "
            "subfolders, optionally sweep.json) or a `benchmark score` REPORT.json")

_STEP_FILE = re.compile(r"step_(\d+)\.json")
# Config fields compared as one value: their dict keys are data (task names), not settings.
_ATOMIC = frozenset({"data.tasks", "data.train_digits", "data.task_digits", "eval.task_digits"})
# Config fields that differ between runs without being a setting of the experiment.
_NOT_SETTINGS = frozenset({"workdir"})


class ReportError(Exception):
  """A bad input; the message names the file and what it should contain."""


@dataclasses.dataclass(frozen=True)
class TaskResult:
  """One task of one evaluation: metrics per digit length and per bucket, wld / ppd."""
  per_digit: dict[int, dict[str, float]]
  buckets: dict[str, dict[str, float]]
  well_learned: dict[str, float | None]
  preserving: dict[str, float | None]


@dataclasses.dataclass(frozen=True)
class Evaluation:
  """One eval file: the results of every task at one point of training (or of a scoring)."""
  source: paths_lib.Path
  step: int | None
  samples_seen: float | None
  tasks: dict[str, TaskResult]
  meta: dict[str, Any]  # the file's `_meta` object ({} if none)


@dataclasses.dataclass(frozen=True)
class LossPoint:
  """A loss at one step: the training loss of a logged step or a validation loss."""
  step: int
  samples_seen: float | None  # None when the run's log does not reach this step
  loss: float


@dataclasses.dataclass(frozen=True)
class Losses:
  """A run's loss curves, ordered by step (empty for scored reports and unlogged runs)."""
  train: tuple[LossPoint, ...] = ()
  val: tuple[LossPoint, ...] = ()


@dataclasses.dataclass
class Entry:
  """One run or one scored report: its settings, its final results and its eval history."""
  name: str
  kind: str  # "run" or "report"
  path: paths_lib.Path
  config: dict[str, Any]  # flattened config.json ({} for reports)
  args: dict[str, Any] | None  # the sweep's grid arguments for this run, if a sweep.json named it
  final: Evaluation
  history: list[Evaluation]  # periodic evals ordered by step; may be empty
  train_digits: dict[str, tuple[int, int]]  # task -> trained digit range, for shading
  losses: Losses = Losses()


def read_json(path: paths_lib.Path) -> Any:
  """Parsed JSON, or a ReportError naming the file and the parser's complaint."""
  try:
    return json.loads(path.read_text())
  except (OSError, UnicodeDecodeError) as e:
    raise ReportError(f"cannot read {path}: {e}") from e
  except json.JSONDecodeError as e:
    raise ReportError(f"{path} is not valid JSON ({e}); was it written completely?") from e


def _number(value: Any, path: paths_lib.Path, where: str) -> float:
  """A JSON number as written (ints stay ints, so tables show counts as counts); null -> NaN."""
  if value is None:
    return math.nan
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    raise ReportError(f"{path}: {where} is {value!r}, expected a number")
  return value


def _metrics(raw: Any, path: paths_lib.Path, where: str) -> dict[str, float]:
  if not isinstance(raw, dict):
    raise ReportError(f"{path}: {where} is {type(raw).__name__}, expected an object "
                      f"with {', '.join(METRICS)}, n")
  missing = [m for m in METRICS if m not in raw]
  if missing:
    raise ReportError(f"{path}: {where} lacks {', '.join(missing)}")
  out = {m: _number(raw[m], path, f"{where}.{m}") for m in METRICS}
  out["n"] = _number(raw.get("n"), path, f"{where}.n")
  return out


def _digit_table(raw: Any, path: paths_lib.Path, where: str) -> dict[str, float | None]:
  if raw is None:
    return {}
  if not isinstance(raw, dict):
    raise ReportError(f"{path}: {where} is {raw!r}, expected {{metric: digits}}")
  return {m: None if raw.get(m) is None else _number(raw[m], path, f"{where}.{m}")
          for m in METRICS if m in raw}


def _task_result(raw: Any, path: paths_lib.Path, task: str) -> TaskResult:
  if not isinstance(raw, dict) or not isinstance(raw.get("per_digit"), dict):
    raise ReportError(f"{path}: task {task!r} has no 'per_digit' object; expected "
                      "{task: {'per_digit': {d: {...}}, 'S': {...}, ..., "
                      "'well_learned_digits': {...}}} as the evaluator and `benchmark score` write")
  per_digit = {}
  for digit, metrics in raw["per_digit"].items():
    try:
      d = int(digit)
    except ValueError:
      raise ReportError(f"{path}: task {task!r} has per_digit key {digit!r}, "
                        "expected a digit length") from None
    per_digit[d] = _metrics(metrics, path, f"{task}.per_digit.{digit}")
  buckets = {b: _metrics(raw[b], path, f"{task}.{b}") for b in BUCKETS
             if raw.get(b) is not None}
  buckets = {b: v for b, v in buckets.items() if v["n"] != 0}  # an empty bucket is no result
  if not per_digit and not buckets:
    raise ReportError(f"{path}: task {task!r} has neither per-digit nor S/M/L/XL results")
  return TaskResult(
      per_digit=dict(sorted(per_digit.items())), buckets=buckets,
      well_learned=_digit_table(raw.get("well_learned_digits"), path,
                                f"{task}.well_learned_digits"),
      preserving=_digit_table(raw.get("performance_preserving_digits"), path,
                              f"{task}.performance_preserving_digits"))


def read_evaluation(path: paths_lib.Path, step: int | None = None) -> Evaluation:
  """One eval / REPORT.json file: task keys hold results, keys starting with `_` are metadata."""
  raw = read_json(path)
  if not isinstance(raw, dict):
    raise ReportError(f"{path}: expected a JSON object keyed by task, got {type(raw).__name__}")
  meta = raw.get("_meta") if isinstance(raw.get("_meta"), dict) else {}
  tasks = {k: _task_result(v, path, k) for k, v in raw.items() if not k.startswith("_")}
  if not tasks:
    raise ReportError(f"{path} holds no task results (only keys starting with '_')")
  if step is None and isinstance(meta.get("step"), int):
    step = meta["step"]
  seen = meta.get("samples_seen")
  seen = None if seen is None else _number(seen, path, "_meta.samples_seen")
  return Evaluation(source=path, step=step, samples_seen=seen, tasks=tasks, meta=meta)


def read_train_log(path: paths_lib.Path) -> list[dict[str, Any]]:
  """The JSON objects of a run's `train_metrics.jsonl`, logged steps and events alike; a torn
  last line (a run killed mid-write) is skipped; [] when the file is absent."""
  if not path.exists():
    return []
  try:
    lines = path.read_text().splitlines()
  except (OSError, UnicodeDecodeError) as e:
    raise ReportError(f"cannot read {path}: {e}") from e
  records = []
  for number, line in enumerate(lines, 1):
    if not line.strip():
      continue
    try:
      record = json.loads(line)
    except json.JSONDecodeError as e:
      if number == len(lines):
        continue
      raise ReportError(f"{path}:{number} is not valid JSON ({e})") from e
    if isinstance(record, dict):
      records.append(record)
  return records


def _is_number(value: Any) -> bool:
  return isinstance(value, (int, float)) and not isinstance(value, bool)


def _logged(records: list[dict[str, Any]], field: str) -> dict[int, float]:
  """{step: value of `field`} of the logged steps (not events); a resumed run's repeated
  steps keep their last value."""
  return {r["step"]: float(r[field]) for r in records
          if "event" not in r and isinstance(r.get("step"), int) and _is_number(r.get(field))}


def _losses(records: list[dict[str, Any]], history: list[Evaluation],
            points: list[tuple[int, float]]) -> Losses:
  """Training loss per logged step; validation loss per evaluation, from the eval files'
  `_meta.val_loss` or else the log's `eval` events (runs that evaluate no test questions
  write no eval file)."""
  train = tuple(LossPoint(step, _samples_at(step, points), loss)
                for step, loss in sorted(_logged(records, "loss").items()))
  val = {r["step"]: LossPoint(r["step"], _samples_at(r["step"], points), float(r["val_loss"]))
         for r in records if r.get("event") == "eval" and isinstance(r.get("step"), int)
         and _is_number(r.get("val_loss"))}
  for e in history:
    if e.step is not None and _is_number(e.meta.get("val_loss")):
      val[e.step] = LossPoint(e.step, e.samples_seen, float(e.meta["val_loss"]))
  return Losses(train=train, val=tuple(val[s] for s in sorted(val)))


def _samples_at(step: int, points: list[tuple[int, float]]) -> float | None:
  """Samples seen at `step`, linearly interpolated between logged steps; None outside them."""
  for (s0, n0), (s1, n1) in zip(points, points[1:]):
    if s0 <= step <= s1:
      return n0 + (n1 - n0) * (step - s0) / (s1 - s0)
  if points and points[-1][0] == step:
    return points[-1][1]
  return None


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
  """Dotted keys -> values; `data.tasks` and the digit ranges stay whole (their keys are data)."""
  out = {}
  for key, value in config.items():
    name = prefix + key
    if isinstance(value, dict) and name not in _ATOMIC:
      out.update(flatten(value, name + "."))
    elif key not in _NOT_SETTINGS:
      out[name] = value
  return out


# Fields added to the config after runs were made, with the value that reproduces what those
# runs did (the scoring rules' defaults are the rules that came before them): a run saved
# without one reads as holding that value.
_ADDED_FIELDS = {
    "eval.learned_digits_rule": DEFAULT_LEARNED_DIGITS_RULE,
    "eval.dlength_rule": DEFAULT_DLENGTH_RULE,
    "eval.task_digits": {},  # every task evaluated over eval.digits
    "data.loss_on_padding": False,  # the loss over answer tokens only
    "train.microbatches": 1,  # the whole batch in one pass
    "eval.positions": positions.DEFAULT_RULE,  # ids 0, 1, 2, ...
}


def _upgraded(raw: dict[str, Any]) -> dict[str, Any]:
  """The flattened config with legacy fields in today's names (`settings.upgrade`) and the
  fields added since at the value the run behaved as (`_ADDED_FIELDS`), in the saved order:
  seeds run before and after a knob was renamed or added then read as one setting."""
  upgraded = flatten(settings.plain(settings.upgrade(ml_collections.ConfigDict(raw))))
  upgraded = {**_ADDED_FIELDS, **upgraded}
  return {k: upgraded[k] for k in dict.fromkeys([*flatten(raw), *upgraded]) if k in upgraded}


def _step_files(eval_dir: paths_lib.Path) -> list[tuple[int, paths_lib.Path]]:
  found = [(_STEP_FILE.fullmatch(p.name), p) for p in eval_dir.glob("step_*.json")]
  return sorted((int(m.group(1)), p) for m, p in found if m)


def is_workdir(path: paths_lib.Path) -> bool:
  return path.is_dir() and ((path / "config.json").is_file() or (path / "eval").is_dir())


def has_results(path: paths_lib.Path) -> bool:
  eval_dir = path / "eval"
  return (eval_dir / "latest.json").is_file() or bool(_step_files(eval_dir))


def load_workdir(path: paths_lib.Path, args: dict[str, Any] | None = None,
                 name: str | None = None) -> Entry:
  """A training run: final eval (latest.json, else the last step), history and settings."""
  eval_dir = path / "eval"
  steps = _step_files(eval_dir)
  latest = eval_dir / "latest.json"
  if not latest.is_file() and not steps:
    raise ReportError(f"{path} has no eval results: expected {latest} or {eval_dir}/step_N.json "
                      "(has the run reached its first evaluation?)")
  history = [read_evaluation(p, step) for step, p in steps]
  final = read_evaluation(latest) if latest.is_file() else history[-1]
  if final.step is not None and final.step not in {e.step for e in history}:
    history = sorted(history + [final], key=lambda e: e.step)
  records = read_train_log(path / "train_metrics.jsonl")
  points = sorted(_logged(records, "samples_seen").items())
  history = [e if e.samples_seen is not None or e.step is None
             else dataclasses.replace(e, samples_seen=_samples_at(e.step, points))
             for e in history]
  config_path = path / "config.json"
  config = {}
  if config_path.is_file():
    raw = read_json(config_path)
    if not isinstance(raw, dict):
      raise ReportError(f"{config_path}: expected the run's config as a JSON object")
    config = _upgraded(raw)
  try:
    ranges = trained.train_ranges(config, list(final.tasks))
  except ValueError as e:
    raise ReportError(f"{config_path}: {e}") from None
  return Entry(name=name or path.name, kind="run", path=path, config=config, args=args,
               final=final, history=history, train_digits=ranges,
               losses=_losses(records, history, points))


def load_report(path: paths_lib.Path) -> Entry:
  """A `benchmark score` REPORT.json: named by `_meta.model` if present, else by its file."""
  final = read_evaluation(path)
  model = final.meta.get("model")
  default = path.parent.name if path.stem.lower() == "report" and path.parent.name else path.stem
  return Entry(name=model if isinstance(model, str) and model else default, kind="report",
               path=path, config={}, args=None, final=final, history=[], train_digits={})


def _sweep_runs(path: paths_lib.Path) -> list[tuple[paths_lib.Path, str, dict | None, str | None]]:
  """(workdir, name, grid args, status) for each run of a sweep, from sweep.json or subfolders."""
  spec_path = path / "sweep.json"
  if not spec_path.is_file():
    return [(p, p.name, None, None) for p in sorted(path.iterdir()) if is_workdir(p)]
  spec = read_json(spec_path)
  runs = spec.get("runs") if isinstance(spec, dict) else None
  if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
    raise ReportError(f"{spec_path}: expected {{'runs': [{{'name', 'workdir', 'args', "
                      "'status'}, ...]}} as launch/sweep.py writes")
  out = []
  for run in runs:
    name = str(run.get("name") or run.get("workdir") or "")
    workdir = paths_lib.path(str(run.get("workdir") or name))
    # Relative workdirs may be relative to the sweep folder or to where the sweep was launched.
    candidates = [workdir] if workdir.is_absolute() else [path / workdir, path / workdir.name,
                                                          path / name, workdir]
    found = next((c for c in candidates if is_workdir(c)), candidates[0])
    args = run.get("args") if isinstance(run.get("args"), dict) else None
    out.append((found, name or found.name, args, run.get("status")))
  return out


def load_sweep(path: paths_lib.Path, log: Callable[[str], None]) -> list[Entry]:
  """Every run of a sweep that has eval results; the others are reported and skipped."""
  runs = _sweep_runs(path)
  entries = []
  for workdir, name, args, status in runs:
    if is_workdir(workdir) and has_results(workdir):
      entries.append(load_workdir(workdir, args, name))
    else:
      state = f" (status: {status})" if status else ""
      log(f"warning: skipping run {name}{state}: no eval results in {workdir / 'eval'}")
  if not entries:
    raise ReportError(f"{path}: none of its {len(runs)} runs has eval results; expected "
                      "subfolders with eval/latest.json" if runs else
                      f"{path} holds no run workdirs; expected {EXPECTED}")
  return entries


def load(paths: list[str | os.PathLike], log: Callable[[str], None] = print) -> list[Entry]:
  """Entries from any mix of workdirs, sweep folders and REPORT.json files, in input order."""
  entries = []
  for path in map(paths_lib.path, paths):  # local paths and gs:// URLs alike
    if path.is_file():
      entries.append(load_report(path))
    elif not path.exists():
      raise ReportError(f"{path} does not exist; expected {EXPECTED}")
    elif is_workdir(path):
      entries.append(load_workdir(path))
    elif not any(path.iterdir()):
      raise ReportError(f"{path} is empty; expected {EXPECTED}")
    else:
      entries.extend(load_sweep(path, log))
    log(f"loaded {path} ({len(entries)} runs so far)")
  _tell_apart(entries)
  return entries


def _tell_apart(entries: list[Entry]) -> None:
  """Prefixes the names that several entries share (the same run name from two sweeps, two
  REPORT.json files of one model) with the fewest trailing folders above each that make it
  unique: `a/run0` and `b/run0`, or `random_positions/reverse/runs/run0` beside
  `rev_vs_pad/reverse/runs/run0` and `rope_perf/runs/run0`. The same input given twice is
  refused: it would count one run as two."""
  where: dict[str, str] = {}  # absolute path (a URL as given) -> the input
  for entry in entries:
    key = _absolute(entry)
    if key in where:
      raise ReportError(f"{entry.path} is given twice (also as {where[key]}); give each run "
                        "once")
    where[key] = str(entry.path)
  by_name: dict[str, list[Entry]] = {}
  for entry in entries:
    by_name.setdefault(entry.name, []).append(entry)
  for name, same in by_name.items():
    if len(same) < 2:
      continue
    folders = [tuple(p for p in _absolute(e).split("/")[:-1] if p) for e in same]
    for entry, own in zip(same, folders):
      for depth in range(1, len(own) + 1):
        ending = own[-depth:]
        if sum(f[-depth:] == ending for f in folders) == 1:
          break
      else:  # no folder above tells it apart (a root-level path)
        raise ReportError(f"{entry.path} and another input share the name {name!r} and no "
                          "folder above tells them apart; give their folders")
      entry.name = "/".join(ending + (name,))


def _absolute(entry: Entry) -> str:
  """The entry's path, absolute where it is local (`gs://` URLs as they are)."""
  text = str(entry.path).rstrip("/")
  return text if "://" in text else os.path.abspath(text)
