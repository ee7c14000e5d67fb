"""Synthetic runs, sweeps and scored reports in the formats the trainer and `benchmark score`
write, built from plain formulas so each test knows every number independently."""
import json
import pathlib

BUCKET_DIGITS = {"S": range(1, 5), "M": range(5, 9), "L": range(9, 15), "XL": range(15, 21)}


def task_json(em_of_digit, digits=range(1, 21)) -> dict:
  """A task's results: per digit (EM from the formula, DM and dlength derived), bucket means
  computed here with plain sums, and wld / ppd by the paper's thresholds."""
  per_digit = {}
  for d in digits:
    em = em_of_digit(d)
    per_digit[str(d)] = {"exact_match": em, "digit_match": (1 + em) / 2,
                         "dlength": (1 - em) * d / 3, "n": 10}
  out = {"per_digit": per_digit}
  for bucket, span in BUCKET_DIGITS.items():
    rows = [per_digit[str(d)] for d in span if str(d) in per_digit]
    if rows:
      out[bucket] = {m: sum(r[m] for r in rows) / len(rows)
                     for m in ("exact_match", "digit_match", "dlength")}
      out[bucket]["n"] = 10 * len(rows)
  good = [d for d in digits if per_digit[str(d)]["exact_match"] >= 0.9]
  fair = [d for d in digits if per_digit[str(d)]["exact_match"] >= 0.1]
  out["well_learned_digits"] = {"exact_match": max(good, default=0), "digit_match": 7,
                                "dlength": 6}
  out["performance_preserving_digits"] = {"exact_match": max(fair, default=0),
                                          "digit_match": 12, "dlength": 11}
  return out


def write_json(path: pathlib.Path, value) -> pathlib.Path:
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps(value))
  return path


def make_run(workdir: pathlib.Path, *, pe: str = "rope", tasks=("add_int",), seed: int = 0,
             quality: float = 1.0, steps=(100, 200), samples_in_meta: bool = True,
             latest: bool = True) -> pathlib.Path:
  """A finished training workdir: config.json, eval/step_N.json for `steps` (improving with
  the step), eval/latest.json (the last step) and train_metrics.jsonl at 32 samples/step."""
  config = {"seed": seed, "model": {"preset": "tiny", "posenc": {"name": pe}},
            "data": {"tasks": {t: 1.0 for t in tasks}, "train_digits": [1, 8]},
            "tokenizer": {"k": 1}, "format": {"reverse": "none"}, "workdir": str(workdir)}
  write_json(workdir / "config.json", config)
  evals = {}
  for step in steps:
    scale = quality * step / max(steps)
    result = {t: task_json(lambda d, s=scale, i=i: s * 0.9 ** (d * (i + 1) / 2))
              for i, t in enumerate(tasks)}
    result["_meta"] = {"step": step} | ({"samples_seen": 32 * step} if samples_in_meta else {})
    evals[step] = result
    write_json(workdir / "eval" / f"step_{step}.json", result)
  if latest:
    write_json(workdir / "eval" / "latest.json", evals[max(steps)])
  lines = [json.dumps({"step": s, "samples_seen": 32 * s, "loss": 1.0 / s})
           for s in range(10, max(steps) + 11, 10)]
  lines.insert(3, json.dumps({"event": "resume", "step": 30}))
  (workdir / "train_metrics.jsonl").write_text("\n".join(lines) + "\n")
  return workdir


def make_report_json(path: pathlib.Path, model: str, tasks=("add_int", "max_int")) -> pathlib.Path:
  report = {t: task_json(lambda d, i=i: 0.95 ** (d * (i + 1))) for i, t in enumerate(tasks)}
  report["_meta"] = {"model": model, "n_predictions": 1000}
  return write_json(path, report)
