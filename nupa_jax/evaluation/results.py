"""Evaluation results: `eval/step_{N}.json` files, the printed table and TensorBoard scalars.

Scores are summarised per digit length and per S/M/L/XL bucket (`metrics.summarize`), plus one
extra bucket `metrics.BEYOND` ("beyond": every evaluated length past the task's tier) when
`config.eval.beyond_digits` asked for such lengths; the table and the scalars show it then.
Each task's summary records the rules of its well-learned / performance-preserving digits and
of its dlength (`metrics.rules_of`); `relearn` recomputes the former of a results file by
another rule (`python -m nupa_jax.evaluation.relearn`).
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence

from nupa_jax import metrics
from nupa_jax import paths
from nupa_jax import tasks as tasks_lib
from nupa_jax.evaluation import positions as positions_lib

EVAL_DIR = "eval"


def skipped_meta(skipped: dict[str, int]) -> dict:
  """`{"skipped_over_context": {task: count}}` when test questions were left out, else {}."""
  return {"skipped_over_context": dict(skipped)} if skipped else {}


def write_results(workdir: str | os.PathLike, step: int, results: dict,
                  meta: dict) -> paths.Path:
  """`eval/step_{step}.json` and `eval/latest.json` (with a `_meta` entry); returns the former."""
  directory = paths.path(workdir) / EVAL_DIR
  path = directory / f"step_{step}.json"
  for target in (path, directory / "latest.json"):
    write_evaluation(target, step, results, meta)
  return path


def write_evaluation(path: str | os.PathLike, step: int, results: dict, meta: dict) -> None:
  """One results file with its `_meta` entry, written atomically (a killed run never leaves half
  a file)."""
  path = paths.path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  paths.write_text_atomic(path, json.dumps({**results, "_meta": dict(meta, step=step)},
                                           indent=1))


def predictions_path(results_file: str | os.PathLike, process: int = 0,
                     processes: int = 1) -> paths.Path:
  """Where the answers behind a results file go: beside it, `NAME.predictions.jsonl` (with
  `.process-K` before `.jsonl` when several processes each write the questions they hold)."""
  results_file = paths.path(results_file)
  stem = results_file.name.removesuffix(".json")
  part = f".process-{process}" if processes > 1 else ""
  return results_file.with_name(f"{stem}.predictions{part}.jsonl")


def write_predictions(path: str | os.PathLike, records: Sequence[dict]) -> None:
  """One JSON line a question (`evaluator.prediction_record`), written atomically."""
  path = paths.path(path)
  path.parent.mkdir(parents=True, exist_ok=True)
  paths.write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in records))


def evaluation_name(step: int, greedy: bool, per_length: int,
                    tasks: Sequence[str] | None = None,
                    positions: str = positions_lib.DEFAULT_RULE) -> str:
  """File name of a re-evaluation: the checkpoint step and every setting that changes results,
  so that evaluations with other settings sit side by side instead of replacing each other
  (position ids other than the default consecutive ones add `_{rule}-positions`)."""
  name = f"step_{step}_{'greedy' if greedy else 'sampled'}_{per_length}q"
  name += f"_{'-'.join(tasks)}" if tasks else ""
  name += "" if positions == positions_lib.DEFAULT_RULE else f"_{positions}-positions"
  return name + ".json"


def relearn(results: dict, rule: str) -> dict:
  """A results file's contents (`{task: summary, "_meta": ...}`) with every task's well-learned
  and performance-preserving digits recomputed from its per-length means by `rule`
  (`metrics.LEARNED_DIGITS_RULES`); entries starting with `_` are kept as they are."""
  out = {}
  for task, summary in results.items():
    if task.startswith("_"):
      out[task] = summary
    elif not isinstance(summary, dict) or not isinstance(summary.get("per_digit"), dict):
      raise ValueError(f"task {task!r} has no per_digit means to compute its digits from")
    else:
      out[task] = metrics.relearn(summary, tasks_lib.get(task).max_digits, rule)
  return out


def _buckets(results: dict) -> tuple[str, ...]:
  """S/M/L/XL, and `metrics.BEYOND` when some task has lengths past its tier."""
  beyond = any(metrics.BEYOND in s for t, s in results.items() if not t.startswith("_"))
  return metrics.BUCKET_NAMES + ((metrics.BEYOND,) if beyond else ())


def format_table(results: dict) -> str:
  """Tasks x S/M/L/XL (and beyond): exact match / digit match / dlength, well-learned digits."""
  buckets = _buckets(results)
  header = f"{'task':<22}" + "".join(f"{b + ' EM/DM/dlen':>22}" for b in buckets) + "   wld(EM)"
  lines = [header, "-" * len(header)]
  for task, summary in results.items():
    if task.startswith("_"):
      continue
    cells = []
    for b in buckets:
      s = summary.get(b) or {}
      if not s.get("n"):
        cells.append(f"{'-':>22}")
      else:
        cells.append(f"{s['exact_match']:>8.3f}/{s['digit_match']:.3f}/{s['dlength']:<6.2f}")
    wld = summary.get("well_learned_digits", {}).get("exact_match")
    lines.append(f"{task:<22}" + "".join(cells) + f"   {wld}")
  return "\n".join(lines)


def bucket_scalars(results: dict) -> dict[str, float]:
  """`{task/bucket/metric: value}` for TensorBoard."""
  out = {}
  for task, summary in results.items():
    for b in _buckets(results):
      s = summary.get(b) or {}
      for m in ("exact_match", "digit_match", "dlength"):
        if s.get("n") and s.get(m) is not None and math.isfinite(s[m]):
          out[f"{task}/{b}/{m}"] = s[m]
  return out
