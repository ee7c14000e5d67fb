"""Question generation speed: questions/s per task, and the time to build the whole test set.

    python benchmarks/benchmark_generation.py [--per-length 100] [--tasks a,b]
    python benchmarks/benchmark_generation.py --build [--per-length 1000] [--workers 2]

Per task, one process draws `--per-length` distinct questions at every test length (sample,
solve, prompt, deduplication: `testset.questions`). `--build` times `benchmark build` of JSONL
alone and of JSONL + TFDS into a temporary directory, reporting wall and CPU seconds (CPU time
is the honest number on a shared machine). Targets: the full JSONL in <= 2 min on
2 cores, the TFDS export <= 5 min more.
"""
import argparse
import resource
import tempfile
import time

from nupa_jax import tasks
from nupa_jax.benchmark import build
from nupa_jax.benchmark import testset


def _cpu_seconds() -> float:
  """CPU time of this process and its finished children (the build's workers)."""
  return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                               resource.getrusage(resource.RUSAGE_CHILDREN)))


def per_task(names: list[str], per_length: int) -> None:
  print(f"{'task':22s} {'questions':>10s} {'q/s':>9s}")
  total_questions = total_seconds = 0
  for name in names:
    start = time.process_time()
    count = sum(len(testset.questions(name, length, 0, per_length))
                for length in tasks.get(name).test_digits)
    seconds = time.process_time() - start
    total_questions += count
    total_seconds += seconds
    print(f"{name:22s} {count:10,d} {count / seconds:9,.0f}")
  print(f"{'all':22s} {total_questions:10,d} {total_questions / total_seconds:9,.0f}  "
        f"(one process, CPU time)")


def whole_build(names: list[str], per_length: int, workers: int | None) -> None:
  for formats in (("jsonl",), build.FORMATS):
    with tempfile.TemporaryDirectory() as out:
      wall, cpu = time.perf_counter(), _cpu_seconds()
      counts = build.build(out, per_length=per_length, task_names=names, formats=formats,
                           workers=workers)
      wall, cpu = time.perf_counter() - wall, _cpu_seconds() - cpu
    questions = sum(counts.values())
    print(f"build {'+'.join(formats):10s} {questions:,} questions: {wall:6.1f} s wall "
          f"({questions / wall:,.0f} q/s), {cpu:6.1f} s CPU")


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--per-length", type=int)
  parser.add_argument("--tasks", help="comma-separated task names (default: every task)")
  parser.add_argument("--build", action="store_true", help="time the whole test-set build")
  parser.add_argument("--workers", type=int, default=2)
  args = parser.parse_args()
  names = testset.resolve_tasks(args.tasks.split(",") if args.tasks else None)
  if args.build:
    whole_build(names, args.per_length or 1000, args.workers)
  else:
    per_task(names, args.per_length or 100)


if __name__ == "__main__":
  main()
