"""Where the training process's threads are: `python -m nupa_jax.train` run in this process with
a sampler of every thread's Python stack.

    python benchmarks/host_threads.py --at 40 --for 10 --out threads.json -- \\
        --config=configs/paper.py:table=rope_perf --workdir=/tmp/run --config.train.steps=6000

From `--at` seconds after the start, for `--for` seconds (or until the command ends), every
2 ms, the sampler records for each thread its innermost frame and its two innermost nupa_jax /
grain frames. The sampler runs only while it holds the GIL, so no other thread is running
Python then: a thread counted at a `wait` is idle, one counted inside a call such as
`batched_device_put` or the jitted step is in that call's C++ (transfers, dispatch). A
multi-GPU step of a small model can outrun the host; these counts say which of the loop, the
device placement and grain holds it back.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import runpy
import sys
import threading
import time

# As `python -m` from the repository root would have it (the configs import `configs.common`).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[0] = ROOT


def _short(filename: str) -> str:
  return filename.split("site-packages/")[-1].split(ROOT + "/")[-1]


def sample(delay: float, span: float, out: str, done: threading.Event) -> None:
  """Samples from `delay` s for `span` s, or until `done` (the command ended), then writes."""
  done.wait(delay)
  names: dict[int, str] = {}
  innermost, own = collections.Counter(), collections.Counter()
  rounds, end = 0, time.time() + span
  while time.time() < end and not done.is_set():
    names.update({t.ident: t.name for t in threading.enumerate()})
    for ident, frame in sys._current_frames().items():  # pylint: disable=protected-access
      if ident == threading.get_ident():
        continue
      name = names.get(ident, str(ident))
      innermost[(name, f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} "
                       f"{frame.f_code.co_name}")] += 1
      stack = []
      while frame is not None and len(stack) < 2:
        if "nupa_jax" in frame.f_code.co_filename or "grain" in frame.f_code.co_filename:
          stack.append(f"{_short(frame.f_code.co_filename)}:{frame.f_lineno} "
                       f"{frame.f_code.co_name}")
        frame = frame.f_back
      own[(name, " < ".join(stack))] += 1
    rounds += 1
    time.sleep(0.002)
  with open(out, "w") as f:
    json.dump({"rounds": rounds,
               "innermost": [[*k, v] for k, v in innermost.most_common()],
               "own": [[*k, v] for k, v in own.most_common()]}, f, indent=1)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
  parser.add_argument("--at", type=float, default=40, help="seconds before sampling starts")
  parser.add_argument("--for", dest="span", type=float, default=10, help="seconds sampled")
  parser.add_argument("--out", required=True, help="JSON file of the counts")
  args, train_args = parser.parse_known_args()
  done = threading.Event()
  sampler = threading.Thread(target=sample, args=(args.at, args.span, args.out, done),
                             daemon=True)
  sampler.start()
  sys.argv = ["nupa_jax.train", *(a for a in train_args if a != "--")]
  try:
    runpy.run_module("nupa_jax.train", run_name="__main__")
  finally:  # a command shorter than the window: its counts so far are still written
    done.set()
    sampler.join()


if __name__ == "__main__":  # not in grain's spawned workers
  main()
