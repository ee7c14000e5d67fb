"""Tabulates the runs of `run.sh OUT_DIR`: S / M exact match, when the loss fell, wall time.

    python docs/results/cpu_demo/summary.py OUT_DIR [--fell-below 0.2]

"Fell" is the first logged step whose training loss is below the threshold (the loss of the
tiny model sits at 1-2.5 until it has found which digits to add, then drops by two orders of
magnitude within a few hundred steps).
"""
import argparse
import json
import pathlib


def summarize(out: pathlib.Path, threshold: float) -> list[dict]:
  times = {}
  if (out / "times.txt").exists():
    for line in (out / "times.txt").read_text().splitlines():
      seed, threads, status, seconds, _ = line.split()
      times[(seed, threads)] = (int(status), int(seconds))
  rows = []
  for run in sorted(p for p in out.glob("seed-*_threads-*") if p.is_dir()):
    seed, threads = run.name.removeprefix("seed-").split("_threads-")
    if not (run / "eval" / "latest.json").exists():
      continue  # still running, or stopped before its evaluation
    losses = [json.loads(line) for line in (run / "train_metrics.jsonl").read_text().splitlines()
              if '"loss"' in line]
    results = json.loads((run / "eval" / "latest.json").read_text())["add_int"]
    status, seconds = times.get((seed, threads), (None, None))
    rows.append({"seed": int(seed), "threads": int(threads),
                 "S": results["S"]["exact_match"], "M": results["M"]["exact_match"],
                 "fell_at": next((r["step"] for r in losses if r["loss"] < threshold), None),
                 "final_loss": losses[-1]["loss"], "seconds": seconds, "status": status})
  return rows


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("out", type=pathlib.Path)
  parser.add_argument("--fell-below", type=float, default=0.2)
  args = parser.parse_args()
  print("| seed | threads | S exact match | M exact match | loss < "
        f"{args.fell_below:g} at step | final loss | wall time |")
  print("|---|---|---|---|---|---|---|")
  for r in summarize(args.out, args.fell_below):
    wall = "" if r["seconds"] is None else f"{r['seconds'] // 60} min {r['seconds'] % 60} s"
    print(f"| {r['seed']} | {r['threads']} | {r['S']:.3f} | {r['M']:.3f} | {r['fell_at']} | "
          f"{r['final_loss']:.4f} | {wall} |")


if __name__ == "__main__":
  main()
