"""`python -m nupa_jax.evaluate_llm --model DIR --test BENCH_DIR [--tasks a,b] [--per-length N]
[--shots 0|5] [--greedy | --temperature T --top-p P] [--chat auto|yes|no] [--out DIR]
[--batch-size N] [--dtype bfloat16|float32] [--mesh data=-1,fsdp=1,tensor=1]`

Scores a local Hugging Face checkpoint (Llama 2 / 3 / 3.1, Qwen2) on a test set built by
`python -m nupa_jax.benchmark build`, with the paper's prompts, and writes predictions.jsonl
and REPORT.json (the layout of `benchmark score`) to --out, predictions batch by batch: a
stopped run resumes when rerun with the same settings and --out. With `--export-prompts FILE` it
writes the prompts instead (no model needed), for an API model whose answers `benchmark
score` then scores. The implementation is `nupa_jax.llm.evaluation`.
"""
import argparse
import sys

from nupa_jax import cli
from nupa_jax.benchmark import scoring
from nupa_jax.llm import evaluation


def _mesh(text: str) -> dict[str, int]:
  try:
    return {k.strip(): int(v) for k, v in (item.split("=") for item in text.split(",") if item)}
  except ValueError:
    raise argparse.ArgumentTypeError(f"--mesh {text!r}: expected axis=size,... such as "
                                     "data=-1 or fsdp=4,tensor=2") from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
  parser = cli.ArgumentParser(prog="python -m nupa_jax.evaluate_llm", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--model", help="Hugging Face checkpoint directory")
  parser.add_argument("--test", required=True, help="test set directory (benchmark build)")
  parser.add_argument("--out", help="output directory (default nupa_llm_eval/NAME_Kshot)")
  parser.add_argument("--tasks", help="comma-separated tasks or aliases (default: all)")
  parser.add_argument("--per-length", type=int, help="questions per task and length (default: all)")
  parser.add_argument("--shots", type=int, choices=(0, 5), default=0,
                      help="solved examples before each question (paper: 0 and 5)")
  parser.add_argument("--chat", choices=("auto", "yes", "no"), default="auto",
                      help="use the checkpoint's chat template (auto: where it has one)")
  sampling = parser.add_mutually_exclusive_group()
  sampling.add_argument("--greedy", action="store_true", help="greedy decoding (the default)")
  sampling.add_argument("--temperature", type=float, default=0.0,
                        help="sample at this temperature (the paper's models: 0.6)")
  parser.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass (0.9)")
  parser.add_argument("--seed", type=int, default=0, help="sampling and few-shot seed")
  parser.add_argument("--batch-size", type=int, default=32, help="prompts per generation batch")
  parser.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16")
  parser.add_argument("--mesh", type=_mesh, default={"data": -1},
                      help="device mesh axis sizes, e.g. data=-1 or fsdp=4,tensor=2")
  parser.add_argument("--export-prompts", metavar="FILE",
                      help="write the prompts as JSONL and stop (no model needed)")
  args = parser.parse_args(argv)
  if args.top_p != 1.0 and not args.temperature:
    parser.error("--top-p applies to sampling: give --temperature too")
  return args


def main(argv: list[str] | None = None) -> int:
  args = parse_args(argv)
  options = evaluation.Options(
      test=args.test, model=args.model, out=args.out,
      tasks=[t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None,
      per_length=args.per_length, shots=args.shots, chat=args.chat,
      temperature=args.temperature, top_p=args.top_p, seed=args.seed,
      batch_size=args.batch_size, dtype=args.dtype, mesh=args.mesh)
  with cli.usage_errors(ValueError, *cli.PATH_ERRORS):
    if args.export_prompts:
      count = evaluation.export_prompts(options, args.export_prompts)
      print(f"wrote {count:,} prompts to {args.export_prompts}", file=sys.stderr)
      return 0
    report = evaluation.evaluate(options)
  print(scoring.format_table(report))
  print(f"wrote {report['_meta']['out']}/{{{evaluation.PREDICTIONS},{evaluation.REPORT}}}",
        file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main())
