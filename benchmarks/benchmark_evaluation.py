"""Time a whole-benchmark evaluation: every task, every test length, N questions per length.

    python benchmarks/benchmark_evaluation.py --out=eval_100m.json          # 0.1B, 100 q/length
    python benchmarks/benchmark_evaluation.py --size=tiny --tasks=add_int,max_int \\
        --questions=1 --digits=1,8                                          # CPU smoke run

Why: the final evaluation of `configs/mixed.py` (all 53 tasks, lengths up to 100 digits) is
what a GPU job must fit after its training. This builds a random-weight model of `--size`
with the mixed family's text settings and runs the trainer's evaluator (greedy decoding) on
it as the trainer's final evaluation does, first over all the tasks: questions/s, seconds,
how many generation programs were compiled, their compile seconds summed, and the wall-clock
seconds of compiling them up front, several at once. Then each tier of tasks (20- and
100-digit tasks) alone, for its own questions/s: its programs are compiled by then where its
batches have the whole run's rows (`--questions` of 100 fills 256-row batches), and each entry
counts the compiles it did. A random model rarely emits EOS, so every question runs to its
generation budget: the slowest case, which a trained model only undercuts. Prints one JSON
object and writes it to `--out`.
"""
from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys
import time

import jax

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # configs/
from configs import mixed  # noqa: E402
from nupa_jax import plugins  # noqa: E402,F401  (registers every run mode)
from nupa_jax import runmode  # noqa: E402
from nupa_jax import sharding  # noqa: E402
from nupa_jax import tasks as tasks_lib  # noqa: E402
from nupa_jax.benchmark import testset  # noqa: E402
from nupa_jax.evaluation import evaluator as evaluator_lib  # noqa: E402

GENERATE_PROGRAM = "_generate"  # the jitted decoder (evaluation/generate.py)


class CompileCounter:
  """Backend compilations while it is entered: all of them, and the decoder's."""

  def __init__(self):
    self.programs = collections.Counter()
    self.seconds = collections.Counter()

  def _listen(self, event: str, duration: float, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":
      name = str(kwargs.get("fun_name", ""))
      self.programs[name] += 1
      self.seconds[name] += duration

  def __enter__(self):
    jax.monitoring.register_event_duration_secs_listener(self._listen)
    return self

  def __exit__(self, *exc):
    jax.monitoring.unregister_event_duration_listener(self._listen)

  def summary(self) -> dict:
    generate = [n for n in self.programs if GENERATE_PROGRAM in n]
    return {"generate_compiles": sum(self.programs[n] for n in generate),
            "generate_compile_s": round(sum(self.seconds[n] for n in generate), 2),
            "all_compiles": sum(self.programs.values()),
            "all_compile_s": round(sum(self.seconds.values()), 2)}


class TimedEvaluator(evaluator_lib.Evaluator):
  """The evaluator, timing the compiles it does before the first batch (wall clock)."""

  compile_wall_s = 0.0

  def _precompile(self, *args, **kwargs):
    start = time.perf_counter()
    super()._precompile(*args, **kwargs)
    self.compile_wall_s += time.perf_counter() - start


def tier(task: str) -> str:
  """A task's tier: the longest numbers of its benchmark range (20 or 100 digits)."""
  return str(tasks_lib.get(task).max_digits)


def timed_evaluation(config, encoder, mesh, spec, state, tasks: list[str]) -> dict:
  """Builds the evaluator (questions, encoded batches) and evaluates `state` once."""
  start = time.perf_counter()
  evaluator = TimedEvaluator(config, encoder, mesh, spec.feature_names, tasks=tasks)
  setup_s = time.perf_counter() - start
  questions = sum(map(len, evaluator.questions.values()))
  with CompileCounter() as compiles:
    start = time.perf_counter()
    results = evaluator.evaluate(spec.graphdef, state,
                                 report=lambda line: print(line, file=sys.stderr, flush=True))
    seconds = time.perf_counter() - start
  scored = sum(s[b]["n"] for s in results.values() for b in ("S", "M", "L", "XL"))
  if scored != questions:
    raise SystemExit(f"{scored} of {questions} questions were scored")
  return {"tasks": len(tasks), "questions": questions, "batches": len(evaluator.batches),
          "rows": evaluator.rows, "setup_s": round(setup_s, 3), "seconds": round(seconds, 3),
          "questions_per_s": round(questions / seconds, 2),
          "compile_wall_s": round(evaluator.compile_wall_s, 3), **compiles.summary()}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--size", default="100m", help="model preset (configs/common.py sizes)")
  parser.add_argument("--questions", type=int, default=100, help="questions per task and length")
  parser.add_argument("--tasks", default="", help="comma-separated tasks (default: all)")
  parser.add_argument("--digits", default="1,100", help="evaluated lengths LO,HI (inclusive)")
  parser.add_argument("--batch_size", type=int, default=0,
                      help="prompts per generation batch (default: config.eval.batch_size)")
  parser.add_argument("--no_tiers", action="store_true",
                      help="skip the per-tier evaluations after the full one")
  parser.add_argument("--out", default="", help="also write the JSON result to this file")
  args = parser.parse_args(argv)

  config = mixed.get_config(f"size={args.size}")
  config.eval.per_length = args.questions
  config.eval.digits = tuple(int(d) for d in args.digits.split(","))
  if args.batch_size:
    config.eval.batch_size = args.batch_size
  mode = runmode.resolve(config)
  encoder = mode.text.encoder(config)
  config = mode.text.configure(config, encoder)
  mesh = sharding.make_mesh(config.mesh.shape)
  spec = mode.model.state_spec(config, encoder.vocab_size, mesh, seed=config.seed)
  state = mode.model.initial_state(spec, config, encoder.vocab_size, mesh, seed=config.seed)
  tasks = testset.resolve_tasks(args.tasks.split(",") if args.tasks else None)

  out = {"device": jax.devices()[0].device_kind, "devices": jax.device_count(),
         "size": args.size, "questions_per_length": args.questions,
         "digits": list(config.eval.digits), "batch_size": config.eval.batch_size,
         "greedy": bool(config.eval.greedy)}
  out["all"] = timed_evaluation(config, encoder, mesh, spec, state, tasks)
  if not args.no_tiers:  # every program is compiled by now: decoding alone
    by_tier = collections.defaultdict(list)
    for task in tasks:
      by_tier[tier(task)].append(task)
    out["tiers"] = {name: timed_evaluation(config, encoder, mesh, spec, state, names)
                    for name, names in sorted(by_tier.items(), key=lambda kv: int(kv[0]))}
  text = json.dumps(out, indent=1)
  print(text)
  if args.out:
    pathlib.Path(args.out).write_text(text + "\n")
  return 0


if __name__ == "__main__":
  sys.exit(main())
